"""Write the typed signatures of llmclient's ``create`` methods from the installed official client.

``client.chat.completions.create(...)`` takes what the official ``openai`` client's takes, with the
same types, plus llmclient's own per-call options; an editor completes them and a type checker
flags a misspelt keyword or a wrong value type, as it does for the official client. The official
signatures (their ``@overload`` variants for ``stream``) are read from the installed package and
written into ``llmclient/api/_async/resources.py`` between marker lines, one block per method,
under ``if TYPE_CHECKING:`` so that importing them costs nothing (the sync twin is then generated
by ``scripts/unasync.py``). Types come from the official modules
under ``TYPE_CHECKING`` only: ``import llmclient`` never imports ``openai``.

What is rewritten: an official type is named through its module (``_chat.ChatCompletionMessageParam``);
``Omit`` / ``NotGiven`` accept llmclient's sentinels too; ``extra_headers``, ``extra_query``,
``extra_body`` and ``timeout`` take llmclient's (httpx's) types; defaults become ``...``. The return
types are llmclient's (``ChatCompletion`` is its traced view, ``AsyncStream`` its stream).

``python scripts/signatures.py`` rewrites the blocks; ``--check`` (run by ``make lint``) fails when
one is not what the installed client gives. A new official keyword is one run of this script.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import inspect
import io
import sys
import tokenize
import typing
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "llmclient" / "api" / "_async" / "resources.py"


@dataclass(frozen=True)
class Method:
    name: str  # the block's name: "chat.completions.create"
    module: str  # the official module
    cls: str  # the official (async) class
    alias: str  # how the generated code names that module


METHODS = (
    Method("chat.completions.create", "openai.resources.chat.completions.completions", "AsyncCompletions", "_chat"),
    Method("completions.create", "openai.resources.completions", "AsyncCompletions", "_completions"),
    Method("responses.create", "openai.resources.responses.responses", "AsyncResponses", "_responses"),
)

# The names a signature keeps as they are: typing's forms and the return types llmclient defines.
TYPING = {"Optional", "Union", "Literal", "Iterable", "Mapping", "Sequence", "Dict", "List", "Any", "Type",
          "Callable", "Tuple", "Set", "bool", "int", "float", "str", "bytes", "object", "None", "dict", "list"}
RETURNS = {"ChatCompletion", "ChatCompletionChunk", "Completion", "Response", "ResponseStreamEvent", "AsyncStream"}
SENTINELS = {"Omit": "Omit", "NotGiven": "NotGiven"}  # official -> llmclient's, both accepted
REQUEST_OPTIONS = (
    "extra_headers: Mapping[str, str] | None = None",
    "extra_query: Mapping[str, object] | None = None",
    "extra_body: Mapping[str, object] | None = None",
    "timeout: float | httpx.Timeout | NotGiven | None = ...",
)
# llmclient's own per-call options (llmclient/layers/options.py's CallOptions; a test holds the
# two to each other).
OWN_OPTIONS = (
    "cache: bool | CacheOptions | None = ...",
    "prefetch: bool | Literal['prefix'] | Sequence[Any] | Callable[..., Any] | None = ...",
    "images: bool | str | Mapping[str, Any] | Any | None = ...",
    "wire: Literal['json', 'protobuf', 'auto'] = ...",
    "hedge: bool | HedgeConfig | None = ...",
    "stream_idle_timeout: float | None = ...",
    "auto_cache_key: bool | None = ...",
    "stream_resume: Literal['auto', 'continue'] = ...",
    "stream_early_resume: bool = ...",
    "priority: Literal['low', 'normal'] | None = ...",
)


def _rewrite(annotation: str, method: Method, namespace: dict[str, object]) -> str:
    """An official annotation as llmclient's code names its types (each name token edited in
    place: strings and spacing stay as they are)."""
    lines = annotation.splitlines(keepends=True) or [annotation]
    edits = []
    for tok in tokenize.generate_tokens(io.StringIO(annotation).readline):
        text = tok.string
        if tok.type != tokenize.NAME or text in TYPING or text in RETURNS:
            continue
        if text in SENTINELS:
            edits.append((tok.start, tok.end, f"{method.alias}.{text} | {SENTINELS[text]}"))
        elif text in namespace:
            edits.append((tok.start, tok.end, f"{method.alias}.{text}"))
    for (row, col), (_, end), new in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[end:]
    return "".join(lines).strip()


def _variant(method: Method, fn: object, namespace: dict[str, object]) -> list[str]:
    sig = inspect.signature(fn)  # type: ignore[arg-type]
    params = []
    for name, p in sig.parameters.items():
        if name == "self" or name in ("extra_headers", "extra_query", "extra_body", "timeout"):
            continue
        annotation = _rewrite(str(p.annotation), method, namespace)
        default = "" if p.default is inspect.Parameter.empty else " = ..."
        params.append(f"{name}: {annotation}{default}")
    returns = str(sig.return_annotation)
    lines = ["        @overload", "        async def create(", "            self,", "            *,"]
    lines += [f"            {p}," for p in (*params, *REQUEST_OPTIONS, *OWN_OPTIONS)]
    lines.append(f"        ) -> {returns}: ...")
    return lines


def block(method: Method) -> list[str]:
    """The lines of one method's generated signatures."""
    module = importlib.import_module(method.module)
    fn = getattr(module, method.cls).create
    variants = typing.get_overloads(fn)
    if not variants:
        raise SystemExit(f"{method.module}.{method.cls}.create has no overloads")
    namespace = vars(module)
    import openai  # the installed official client: its version goes in the marker line

    lines = [f"    # signatures: {method.name} (scripts/signatures.py, from openai {openai.__version__}; do not edit)",
             "    if TYPE_CHECKING:  # for type checkers only: at run time these cost nothing"]
    for fn_variant in variants:
        lines += _variant(method, fn_variant, namespace)
        lines.append("")
    lines[-1] = "    # end of signatures"
    return lines


def render(source: str) -> str:
    """``source`` with every block rewritten from the installed official client."""
    out = source
    for method in METHODS:
        start = f"    # signatures: {method.name} "
        lines = out.split("\n")
        first = next((i for i, line in enumerate(lines) if line.startswith(start)), None)
        if first is None:
            raise SystemExit(f"{TARGET}: no '# signatures: {method.name}' marker")
        last = next(i for i in range(first, len(lines)) if lines[i] == "    # end of signatures")
        lines[first:last + 1] = block(method)
        out = "\n".join(lines)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if a block is not current")
    args = parser.parse_args(argv)
    try:
        import openai  # noqa: F401  (the official client the signatures come from)
    except ImportError:
        print("scripts/signatures.py: openai is not installed; nothing to compare", file=sys.stderr)
        return 0 if args.check else 1
    have = TARGET.read_text()
    want = render(have)
    if want == have:
        return 0
    if args.check:
        sys.stdout.writelines(difflib.unified_diff(have.splitlines(keepends=True), want.splitlines(keepends=True),
                                                   str(TARGET), f"{TARGET} (from the installed openai)"))
        print("\nthe create() signatures are out of date: run `python scripts/signatures.py`", file=sys.stderr)
        return 1
    TARGET.write_text(want)
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
