"""A call's plain data and the sans-I/O parts of its journey: the ``Call`` (``call``), its record
(``timings``), tracing, the chain's ``Reply`` (``reply``), what a client learned about servers
(``knowledge``), a stream's reading (``stream_session``) and partial answer (``partial``), and the
rules for retries, resumes and stalls (``retry``, ``resume``, ``watchdog``). Imports only the wire
and the base: every room above may hold these."""
