"""The route stage: which replica serves a call (``OpenAI(base_url=[url1, url2, ...])``).

``key`` (the routing key from the prompt's leading blocks, or the app's ``prompt_cache_key``
/ ``user``), ``ring`` (consistent hashing with bounded loads), ``affinity`` (which replica
holds how much of a prompt), ``health`` (EWMAs, outlier ejection, half-open probes) and
``router`` (the policies and the fleet's state) are pure decisions; ``attempt`` is the thin
I/O the send loop drives.
"""

from .health import Ejection
from .router import Replica, Replicas

__all__ = ["Ejection", "Replica", "Replicas"]
