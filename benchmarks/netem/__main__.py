"""`python -m benchmarks.netem`: put an emulated network in front of any TCP server by hand."""

from __future__ import annotations

import argparse
import json
import ssl
import sys
import threading

from ._network import Network, format_measurement, measure_network
from ._profiles import PROFILES, parse_profile


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def build_parser() -> argparse.ArgumentParser:
    profiles = "; ".join(f"{p.name}: {p.description}" for p in PROFILES.values())
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.netem",
        description="Relay LISTEN -> UPSTREAM through an emulated network. " + profiles,
    )
    parser.add_argument(
        "--profile",
        default="wan",
        help="profile name, optionally with overrides: wan, mobile:loss=0.01, rtt=40,down=8",
    )
    parser.add_argument("--upstream", type=_host_port, required=True, help="server HOST:PORT")
    parser.add_argument(
        "--listen",
        type=_host_port,
        default=("127.0.0.1", 0),
        help="where clients connect (default 127.0.0.1:random)",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed for jitter and loss")
    parser.add_argument("--tls-ca", help="CA bundle: also measure the TLS handshake to UPSTREAM")
    parser.add_argument("--tls-hostname", default=None, help="server name for the TLS check")
    parser.add_argument("--json", action="store_true", help="print the measurement as JSON")
    parser.add_argument(
        "--measure-only", action="store_true", help="measure, print and exit instead of serving"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        profile = parse_profile(args.profile)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    context = None
    if args.tls_ca:
        context = ssl.create_default_context(cafile=args.tls_ca)
    net: Network
    with Network(profile, args.upstream, listen=args.listen, seed=args.seed) as net:
        result = measure_network(net, ssl_context=context, server_hostname=args.tls_hostname)
        print(json.dumps(result, indent=2) if args.json else format_measurement(result))
        print(
            f"LISTENING {net.host}:{net.port} -> {args.upstream[0]}:{args.upstream[1]}", flush=True
        )
        if args.measure_only:
            return 0
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        print(json.dumps({"forwarder": net.stats}), file=sys.stderr)
    return 0


__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
