"""The cost model of a chained Responses turn: what reloading the conversation costs a server,
and what a WebSocket connection that remembers it saves.

A turn with ``previous_response_id`` over HTTP makes the server fetch the earlier response from
its store and rebuild the conversation (render, tokenize, check) before the model sees a token.
OpenAI's Responses API does that work for the whole history on every HTTP turn; a turn on a
WebSocket that continues from the connection's memory skips it and processes only the new
input. What the reference server does for real: an HTTP turn tokenizes the whole conversation
again, a socket turn continuing from its connection's memory only the new input (both are in
Server-Timing as ``tokenize``). What it cannot do for real is the hosted service's reload (a
storage read, the safety stack on the full history, network hops), so that part is this figure.

The public figure (recorded for this project on 2026-12-07), OpenAI's "WebSocket mode" guide
(developers.openai.com/api/docs/guides/websocket-mode): "For rollouts with 20+ tool calls, we
have seen up to roughly 40% faster end-to-end execution." OpenAI's engineering post "Speeding up
agentic workflows with WebSockets in the Responses API" (openai.com/index/speeding-up-agentic-
workflows-with-websockets, 2026-04-22) names where it comes from: work tied to the full history
(tokenization, safety classifiers, state loads) redone on every HTTP turn. xAI's WebSocket mode
guide reports ~20% for the same comparison (docs.x.ai, advanced-api-usage/websocket-mode).

How the figure is applied: ``fraction`` (default 0.40, the guide's) of a chained HTTP turn's
server time to its first token is the reload. A turn that reads its earlier response back from
the store waits ``fraction / (1 - fraction)`` x the earlier turn's own server time to its first
token (measured, this model's waits left out) before its engine request runs; a socket turn
that finds it in its connection's memory waits nothing. The guide's 40% is of the whole task,
the tools' time and the generation included, so 40% of the time to first token is a smaller
wait than the guide's figure implies: the model errs towards less gain, not more. Either way
the server says what it did: ``reload;dur=`` (the wait) in Server-Timing, and on a socket turn
``reload-saved;dur=`` (the wait an HTTP turn would have had), so a benchmark can split a gain
into this figure and the rest. ``--continuation-reload-fraction 0`` switches it off.

Pure: no sleeps, no clocks.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

__all__ = ["GUIDE_SPEEDUP", "ContinuationCost", "add_arguments", "from_args"]

# OpenAI "WebSocket mode" guide, read 2026-12-07: "up to roughly 40% faster end-to-end" for
# rollouts with 20+ tool calls, against HTTP with the same previous_response_id chaining.
GUIDE_SPEEDUP = 0.40


@dataclass(frozen=True)
class ContinuationCost:
    """``fraction``: the share of a chained HTTP turn's time to first token that is the reload
    (0 <= fraction < 1; 0: no model, the server's real work only)."""

    fraction: float = GUIDE_SPEEDUP

    def __post_init__(self) -> None:
        if not 0 <= self.fraction < 1:
            raise ValueError(f"the continuation reload fraction must be in [0, 1), got {self.fraction}")

    def reload_ms(self, earlier_pregen_ms: float) -> float:
        """The wait of a turn that reloads its conversation from the store, given the earlier
        turn's server time to its first token (ms)."""
        if self.fraction <= 0 or earlier_pregen_ms <= 0:
            return 0.0
        return self.fraction / (1 - self.fraction) * earlier_pregen_ms


def _fraction(raw: str) -> float:
    value = float(raw)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1, got {raw}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--continuation-reload-fraction", type=_fraction, default=GUIDE_SPEEDUP,
                   metavar="F",
                   help="the cost model of a chained Responses turn (continuation.py): F of an "
                        "HTTP turn's time to first token is reloading the conversation, which a "
                        "WebSocket turn continuing from its connection's memory skips (default "
                        f"{GUIDE_SPEEDUP}, OpenAI's WebSocket mode guide; 0: off)")


def from_args(args: argparse.Namespace) -> ContinuationCost:
    return ContinuationCost(args.continuation_reload_fraction)
