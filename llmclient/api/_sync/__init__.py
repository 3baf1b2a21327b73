# Generated from llmclient/api/_async/__init__.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""The API resources, written once as coroutines; ``scripts/unasync.py`` writes the blocking
twins into ``../_sync/``."""
