"""``python -m benchmarks``: see :mod:`benchmarks.harness.cli`; ``python -m benchmarks soak``:
:mod:`benchmarks.soak`; ``python -m benchmarks reliability``: :mod:`benchmarks.reliability`, and
its ``overload`` part :mod:`benchmarks.overload` (tools: the harness imports no tool and no tool
another, so the choice is made here)."""

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["soak"]:
        from .soak import main as soak_main

        sys.exit(soak_main(sys.argv[2:], prog="python -m benchmarks soak"))
    if sys.argv[1:3] == ["reliability", "overload"]:
        from .overload import main as overload_main

        overload_main(sys.argv[3:])
        sys.exit(0)
    if sys.argv[1:2] == ["reliability"]:
        from .reliability import main as reliability_main

        reliability_main(sys.argv[2:])
        sys.exit(0)
    from .harness.cli import main

    sys.exit(main())
