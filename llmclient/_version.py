"""llmclient's version, in a module of its own so that any part (telemetry's instrumentation
scope, the User-Agent) can read it without importing the client."""

__version__ = "0.1.0"
