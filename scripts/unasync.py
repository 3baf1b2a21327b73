"""Write the synchronous twins of llmclient's async modules: one source, two clients.

Code that differs between the sync and the async client only by ``async``/``await`` is written
once, async, in a package's ``_async/`` folder; this script writes its synchronous twin into the
``_sync/`` folder beside it (``llmclient/layers/_async/retry.py`` ->
``llmclient/layers/_sync/retry.py``), as httpcore and hishel do with unasync. Every ``_async``
folder under ``llmclient/`` is a source: a new package with twins needs no change here. The rewrite works on Python
tokens, so strings and comments stay where they are and line numbers match between the twins:

- ``async def`` / ``async with`` / ``async for`` lose ``async``; ``await x`` becomes ``x``;
- names in :data:`RENAMES` become their sync twins (``AsyncOpenAI`` -> ``OpenAI``,
  ``__aenter__`` -> ``__enter__``, ``asleep`` -> ``sleep``...), in code, and as whole words in
  docstrings and comments;
- a line ending in ``# unasync: sync=<text>`` is replaced by ``<text>`` (indentation kept),
  for the few places where the two really differ in one expression.

``python scripts/unasync.py`` rewrites the generated files; ``--check`` (run by ``make lint``)
fails, with a diff, when one is not what its source gives, or when a ``_sync`` module has no
source left.
"""

from __future__ import annotations

import argparse
import difflib
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "llmclient"

# Whole names whose sync twin is not what the part rules below give.
RENAMES: dict[str, str] = {
    "StopAsyncIteration": "StopIteration",
    "AsyncTransport": "SyncTransport",
    "AsyncPassthrough": "SyncPassthrough",
    "asynccontextmanager": "contextmanager",
    # the structured-output helpers and the models page (llmclient/lib/_structured.py, _models)
    "async_parse": "parse",
    "async_stream": "stream",
    "async_models_page": "models_page",
    # speculative's runners: a prefetch in a task of the loop, or in a thread (features/prefetch)
    "run_in_task": "run_in_thread",
    # the WebSocket transport's drivers (transport/websocket: hand-written twins)
    "AsyncWebSocket": "SyncWebSocket",
    # the Anthropic face's modules (llmclient/_anthropic.py, _anthropic_async.py)
    "_anthropic_async": "_anthropic",
}
# Each ``_``-separated part of a name: ``aclose_all`` -> ``close_all``, ``__aenter__`` ->
# ``__enter__``, ``shared_async_transport`` -> ``shared_sync_transport``; and a part
# ``Async<Upper>...`` loses ``Async`` (``AsyncOpenAI`` -> ``OpenAI``, ``AsyncIterator`` ->
# ``Iterator``).
PART_RENAMES: dict[str, str] = {
    "async": "sync", "aclose": "close", "aread": "read", "asleep": "sleep", "aiter": "iter",
    "anext": "next", "aenter": "enter", "aexit": "exit", "abegin": "begin", "aget": "get",
    "aset": "set", "adelete": "delete", "alookup": "lookup", "aput": "put", "astore": "store",
    "areplay": "replay", "aflights": "flights", "abackend": "backend", "asend": "send",
    "aafter": "after", "ashield": "shield", "aadmit": "admit", "aacquire": "acquire",
    "asubmit": "submit", "awarm": "warm", "alearned": "learned", "areserve": "reserve",
    "aoff": "off", "aearly": "early", "adropped": "dropped",
}

HEADER = ("# Generated from {name} by scripts/unasync.py: do not edit here, edit that\n"
          "# file and run `python scripts/unasync.py` (make lint checks that this file is current).\n")
PRAGMA = re.compile(r"^(?P<indent>\s*)(?P<code>.*?)\s*# unasync: sync=(?P<sync>.*)$")
_WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


def rename(name: str) -> str:
    """The sync twin of one identifier."""
    found = RENAMES.get(name)
    if found is not None:
        return found
    parts = name.split("_")
    for i, part in enumerate(parts):
        if part in PART_RENAMES:
            parts[i] = PART_RENAMES[part]
        elif part.startswith("Async") and len(part) > 5 and part[5].isupper():
            parts[i] = part[5:]
    return "_".join(parts)


_PROSE_KEYWORDS = re.compile(r"\bawait\s+|\basync\s+(?=(?:def|with|for)\b)")


def _rename_words(text: str) -> str:
    """Docstrings and comments: ``await x`` -> ``x``, names renamed as in code."""
    return _WORD.sub(lambda m: rename(m.group(0)), _PROSE_KEYWORDS.sub("", text))


def unasync_source(source: str) -> str:
    """The synchronous twin of one async module's source."""
    lines = source.splitlines(keepends=True)
    # (row, col_start, col_end, replacement); rows 1-based as tokenize gives them
    edits: list[tuple[int, int, int, str]] = []
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for i, tok in enumerate(tokens):
        (srow, scol), (erow, ecol) = tok.start, tok.end
        if tok.type == tokenize.NAME:
            if tok.string in ("async", "await"):
                nxt = tokens[i + 1] if i + 1 < len(tokens) else None
                if tok.string == "async" and (nxt is None or nxt.string not in ("def", "with", "for")):
                    continue
                end_col = nxt.start[1] if nxt is not None and nxt.start[0] == srow else ecol
                edits.append((srow, scol, end_col, ""))
                continue
            new = rename(tok.string)
            if new != tok.string:
                edits.append((srow, scol, ecol, new))
        elif tok.type in (tokenize.STRING, tokenize.COMMENT) and srow == erow:
            new = _rename_words(tok.string)
            if new != tok.string:
                edits.append((srow, scol, ecol, new))
        elif tok.type == tokenize.STRING:  # a multi-line string: edit it line by line
            for row in range(srow, erow + 1):
                line = lines[row - 1]
                start = scol if row == srow else 0
                end = ecol if row == erow else len(line.rstrip("\r\n"))
                new = _rename_words(line[start:end])
                if new != line[start:end]:
                    edits.append((row, start, end, new))
    for row, start, end, new in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:start] + new + line[end:]
    out = []
    for line in lines:
        match = PRAGMA.match(line.rstrip("\r\n"))
        if match is not None:
            line = f"{match.group('indent')}{match.group('sync')}\n"
        out.append(line)
    return "".join(out)


def generated(path: Path) -> str:
    """What the generated twin of the async module at ``path`` must hold."""
    body = unasync_source(path.read_text())
    if path.name == "__init__.py" and not body.strip():
        return body
    return HEADER.format(name=_show(path)) + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if a generated file is not current")
    args = parser.parse_args(argv)
    failed = 0
    for source, target in pairs(PACKAGE):
        failed |= run(source, target, check=args.check)
    return failed


def pairs(package: Path) -> list[tuple[Path, Path]]:
    """Each ``_async`` source folder under ``package`` and the ``_sync`` folder beside it."""
    return [(source, source.with_name("_sync")) for source in sorted(package.rglob("_async"))
            if source.is_dir() and "__pycache__" not in source.parts]


def _show(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def run(source: Path, target: Path, *, check: bool) -> int:
    """Write (or, with ``check``, compare) ``target``'s generated twin of each ``source`` module."""
    stale = []
    expected_names = set()
    for src, dst in [(src, target / src.name) for src in sorted(source.glob("*.py"))]:
        expected_names.add(dst.name)
        want = generated(src)
        have = dst.read_text() if dst.exists() else ""
        if want == have:
            continue
        if check:
            stale.append(dst)
            sys.stdout.writelines(difflib.unified_diff(
                have.splitlines(keepends=True), want.splitlines(keepends=True),
                _show(dst), f"{_show(dst)} (from {_show(src)})"))
        else:
            dst.parent.mkdir(exist_ok=True)
            dst.write_text(want)
            print(f"wrote {_show(dst)}")
    orphans = [p for p in target.glob("*.py") if p.name not in expected_names] if target.exists() else []
    for orphan in orphans:
        if check:
            stale.append(orphan)
            print(f"{_show(orphan)} has no source in {_show(source)}")
        else:
            orphan.unlink()
            print(f"removed {_show(orphan)}")
    if stale:
        print(f"\n{len(stale)} generated file(s) out of date: run `python scripts/unasync.py`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
