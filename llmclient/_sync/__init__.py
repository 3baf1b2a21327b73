# Generated from llmclient/_async/__init__.py by scripts/unasync.py: do not edit here, edit that
# file and run `python scripts/unasync.py` (make lint checks that this file is current).
"""The OpenAI face's I/O, written once as coroutines (``client.py``); the blocking twin is
generated into ``llmclient/_sync/`` by ``scripts/unasync.py``, as every package's ``_sync``
folder is (``make lint`` fails when a twin is not current)."""
