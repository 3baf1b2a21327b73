"""The layers, written once as coroutines; ``scripts/unasync.py`` writes the blocking twins into
``../_sync/``. One module per layer; ``chain.py`` declares their order."""
