"""Helpers on top of the API calls (structured outputs, streaming helpers), built on the
official package's own ``openai.lib`` so that their semantics are exactly the official ones."""
