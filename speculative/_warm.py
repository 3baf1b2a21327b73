"""When to refresh a warmed prefix so the provider's prompt cache never lets it expire.

Provider prompt caches evict an unused prefix after a few minutes:
- OpenAI prompt caching: prefixes are "typically" kept 5-10 minutes of inactivity, up to an
  hour off-peak (platform.openai.com/docs/guides/prompt-caching, read 2026-12).
- Anthropic prompt caching: 5 minutes by default, refreshed by each use (docs.anthropic.com,
  "Prompt caching", read 2026-12).
- vLLM / SGLang automatic prefix caching: LRU under memory pressure, no fixed TTL.
Refreshing at the shortest of these, minus a margin, keeps a long system prompt hot.
"""

from __future__ import annotations

PROVIDER_CACHE_TTL_S = {
    "openai": 300.0,
    "anthropic": 300.0,
    "vllm": 300.0,  # no TTL; LRU: a periodic touch still protects it from eviction
}
DEFAULT_MARGIN_S = 30.0


def refresh_interval(ttl_s: float, margin_s: float = DEFAULT_MARGIN_S) -> float:
    """Seconds between keep-warm refreshes for a cache that forgets after ``ttl_s``."""
    if ttl_s <= 0:
        raise ValueError("ttl_s must be > 0")
    return max(ttl_s - margin_s, ttl_s / 2)


def refresh_due(last_used: float, now: float, ttl_s: float, margin_s: float = DEFAULT_MARGIN_S) -> bool:
    """True when the prefix was last sent (by the app or a refresh) long enough ago."""
    return now - last_used >= refresh_interval(ttl_s, margin_s)
