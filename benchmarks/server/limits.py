"""What one request may cost the reference server, and how long it may take to arrive.

A server that anyone on the network can reach must not let one small request take it down:
100,000 one-word embedding inputs (well under a megabyte of JSON) once held the event loop
until health checks timed out and grew the process by gigabytes. Each bound below answers 400
(or 408) in OpenAI's error shape and names the limit; the provider's own figure is used where
one is published.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Limits", "add_arguments", "from_args"]

# OpenAI API reference, "Create embeddings" (recorded for this project on 2026-12-03): "any
# array must be 2048 dimensions or less", each input at most the model's 8192 tokens, and "the
# total number of tokens summed across inputs" at most 300,000 per request.
MAX_EMBEDDING_INPUTS = 2048
MAX_EMBEDDING_INPUT_TOKENS = 8192
MAX_REQUEST_TOKENS = 300_000
# OpenAI "Images and vision" guide, "Image input requirements" (2026-12-03): up to 500
# individual image inputs per request.
MAX_IMAGES = 500
# Sequences one request may put in the engine (completions: prompts x n). OpenAI publishes no
# figure; 2048 matches the embeddings bound and is far above any benchmark's use.
MAX_SEQUENCES = 2048
# The whole body must arrive within this long after the headers (a client that stops sending
# would otherwise hold its connection and its request slot for ever). 32 MiB, the body cap, in
# 30 s is 9 Mbit/s; the benchmarks' largest bodies (raw 12 MP photos) are a few MB.
BODY_TIMEOUT_S = 30.0
# Background responses (Responses API, background=true): a finished run's events stay this long
# for a client to resume its stream (OpenAI publishes no figure; a resume comes within seconds
# of a cut), and all runs' event logs together hold at most this many bytes.
BACKGROUND_RETENTION_S = 600.0
BACKGROUND_MAX_BYTES = 256 * 1024 * 1024
# SIGTERM / SIGINT: stop accepting, let requests in flight finish for this long, then exit.
SHUTDOWN_GRACE_S = 3.0


@dataclass(frozen=True)
class Limits:
    max_embedding_inputs: int = MAX_EMBEDDING_INPUTS
    max_embedding_input_tokens: int = MAX_EMBEDDING_INPUT_TOKENS
    max_request_tokens: int = MAX_REQUEST_TOKENS
    max_images: int = MAX_IMAGES
    max_sequences: int = MAX_SEQUENCES
    body_timeout_s: float = BODY_TIMEOUT_S
    background_retention_s: float = BACKGROUND_RETENTION_S
    background_max_bytes: int = BACKGROUND_MAX_BYTES


def _positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        value = kind(raw)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {raw}")
        return value
    parse.__name__ = getattr(kind, "__name__", "value")  # argparse names it in its errors
    return parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("limits (each answered 400/408 naming the limit)")
    g.add_argument("--max-embedding-inputs", type=_positive(int), default=MAX_EMBEDDING_INPUTS,
                   help="inputs per embeddings request (OpenAI: 2048)")
    g.add_argument("--max-request-tokens", type=_positive(int), default=MAX_REQUEST_TOKENS,
                   help="prompt/input tokens per request, summed (OpenAI embeddings: 300000)")
    g.add_argument("--body-timeout-s", type=_positive(float), default=BODY_TIMEOUT_S,
                   help="the request body must arrive within this many seconds (else 408)")
    g.add_argument("--background-retention-s", type=_positive(float), default=BACKGROUND_RETENTION_S,
                   help="a finished background response's events stay this long for a resume "
                        "(then 404)")
    g.add_argument("--background-max-bytes", type=_positive(int), default=BACKGROUND_MAX_BYTES,
                   help="all background responses' event logs together (oldest finished dropped "
                        "first; new background requests 503 while live ones fill it)")
    g.add_argument("--shutdown-grace-s", type=_positive(float), default=SHUTDOWN_GRACE_S,
                   help="on SIGTERM/SIGINT, let requests in flight finish this long, then exit")


def from_args(args: argparse.Namespace) -> Limits:
    return Limits(max_embedding_inputs=args.max_embedding_inputs,
                  max_request_tokens=args.max_request_tokens,
                  body_timeout_s=args.body_timeout_s,
                  background_retention_s=args.background_retention_s,
                  background_max_bytes=int(args.background_max_bytes))
