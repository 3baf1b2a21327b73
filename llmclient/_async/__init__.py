"""The OpenAI face's I/O, written once as coroutines (``client.py``); the blocking twin is
generated into ``llmclient/_sync/`` by ``scripts/unasync.py``, as every package's ``_async``
folder is (``make lint`` fails when a twin is not current)."""
