"""The harness behind ``python -m benchmarks`` (and ``llmclient-bench``): it owns the suite's
records and their statistics, the client drivers, the load loops, the scenario context, the
reference-server subprocess, the metrics sampler, the report and its advice, the ``compare``
gate and the command line. Layered bottom up: ``records`` imports nothing of the harness;
``stats``, ``drivers`` and ``load`` build on it; ``_scenario`` (the context scenarios get) and
``report`` above them; ``cli`` on top. Scenarios live in ``benchmarks/scenarios``, the
standalone tools at the top of ``benchmarks/``.

Importing this package imports none of its modules.
"""
