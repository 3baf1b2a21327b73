"""End-to-end latency benchmarks for llmclient and the reference server they run against."""
