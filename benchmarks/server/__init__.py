"""The reference inference server: an OpenAI-compatible ASGI app over a pluggable engine."""
