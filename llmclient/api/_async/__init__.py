"""The API resources, written once as coroutines; ``scripts/unasync.py`` writes the blocking
twins into ``../_sync/``."""
