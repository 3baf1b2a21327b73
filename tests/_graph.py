"""Import-graph helpers the layering tests share (tests/client/test_feature_boundaries.py for
llmclient, tests/bench/test_layering.py for benchmarks)."""

from __future__ import annotations

from collections.abc import Mapping, Set

__all__ = ["find_loop"]


def find_loop(graph: Mapping[str, Set[str]]) -> list[str] | None:
    """One import loop of ``graph`` (module -> the modules it imports), as the path that closes
    it (``[a, b, a]``), or None when there is none. Depth-first, in sorted order: the same
    graph names the same loop every run."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (loop := visit(nxt)):
                return loop
        path.pop()
        state[node] = 2
        return None

    for name in sorted(graph):
        if name not in state and (loop := visit(name)):
            return loop
    return None
