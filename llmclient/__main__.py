"""``python -m llmclient``: command-line tools. ``doctor URL`` probes an endpoint
(llmclient._doctor)."""

from __future__ import annotations

import sys

USAGE = "usage: python -m llmclient doctor URL [URL ...] [--json] [--api-key KEY] [--model M] [--ca FILE]"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    if args[0] != "doctor":
        print(f"unknown command {args[0]!r}\n{USAGE}", file=sys.stderr)
        return 2
    from ._doctor import main as doctor  # the doctor's probes load only for this command

    return doctor(args[1:])


if __name__ == "__main__":
    sys.exit(main())
