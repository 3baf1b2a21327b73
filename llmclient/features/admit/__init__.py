"""The admit stage: rate limits learned from the server's headers, and pacing before send.

``headers`` (what an answer says), ``cost`` (what a call will be counted for), ``budget`` (GCRA:
how long a call waits) are pure; ``pacer`` is the per-process I/O around them and ``shared``
the same reservations made atomically in Redis for every process (the redis extra, loaded on
first use). docs/ARCHITECTURE.md, "The admit stage".
"""

from .pacer import BudgetTooSmallError, Pacer, Ticket, pacing_mode

__all__ = ["BudgetTooSmallError", "Pacer", "Ticket", "pacing_mode"]
