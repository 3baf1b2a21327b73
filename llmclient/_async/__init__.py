"""What both clients share, written once as coroutines (the blocking twin is generated).

Each module here has a synchronous twin in ``llmclient/_sync/`` that ``scripts/unasync.py``
writes (``async``/``await`` dropped, ``Async*`` names and ``a*`` methods renamed); ``make lint``
fails when a twin is not current. Code whose concurrency really differs between the two
(socket drivers, single-flight, hedge races) is written by hand, twice, where it lives.
"""
