"""What ``pip install llmclient`` installs: the import names, the files, the console scripts.

The repository's top-level ``preprocess/``, ``speculative/`` and ``benchmarks/`` install as
``llmclient.preprocess``, ``llmclient.speculative`` and ``llmclient_bench`` (pyproject.toml,
``[tool.setuptools.package-dir]``); nothing else goes to the top of site-packages. The wheel is
built from a copy of the source (no build isolation, so no index is needed: the test extra
brings setuptools), checked file by file, installed into a folder and used from there by an
interpreter that sees neither the checkout nor the editable install.
"""

from __future__ import annotations

import ast
import configparser
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Source folder -> installed package: what [tool.setuptools.package-dir] says.
INSTALLED_AS = {"llmclient": "llmclient", "preprocess": "llmclient/preprocess",
                "speculative": "llmclient/speculative", "benchmarks": "llmclient_bench"}
SOURCES = ("pyproject.toml", "README.md", *INSTALLED_AS)
SCRIPTS = {"llmclient-bench": "llmclient_bench.harness.cli:main",
           "llmclient-server": "llmclient_bench.server.__main__:main"}
# Data files the installed code reads (package-data), beyond the .py files.
DATA = ("llmclient/py.typed", "llmclient/wire/proto/llmclient.proto", "llmclient/wire/_pbparse.pyi",
        "llmclient/preprocess/py.typed", "llmclient/speculative/py.typed",
        "llmclient_bench/server/vocab.txt",
        *(f"llmclient_bench/server/profiles/{p.name}"
          for p in sorted((ROOT / "benchmarks" / "server" / "profiles").glob("*.json"))))
# Names another distribution may own: none of them may be installed at the top level.
FORBIDDEN_TOP = ("preprocess", "speculative", "benchmarks", "tests", "examples", "scripts")
MIN_SETUPTOOLS = (77, 0)  # project.license as an SPDX expression


def _py_files(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.rglob("*.py")):
        if "__pycache__" not in path.parts:
            yield path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    have = tuple(int(p) for p in version("setuptools").split(".")[:2])
    if have < MIN_SETUPTOOLS:
        pytest.fail(f"building the wheel without isolation needs setuptools>="
                    f"{'.'.join(map(str, MIN_SETUPTOOLS))}, this environment has "
                    f"{version('setuptools')}: pip install -e '.[test]'")
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns(
                "__pycache__", "*.so", "*.pyd", "build", "*.egg-info"))
        else:
            shutil.copy2(path, src / name)
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "--no-cache-dir", "-q", "-w", str(out), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (built,) = out.glob("llmclient-*.whl")
    (out / "build.log").write_text(proc.stdout + proc.stderr)  # what setuptools said building it
    return built


@pytest.fixture(scope="module")
def names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def _dist_info(names: set[str], filename: str) -> str:
    (path,) = [n for n in names if n.endswith(f".dist-info/{filename}")]
    return path


def test_only_llmclient_and_llmclient_bench_at_the_top(names: set[str]) -> None:
    tops = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert tops == {"llmclient", "llmclient_bench"}
    for name in FORBIDDEN_TOP:
        assert not any(n.startswith(name + "/") for n in names), name


def test_every_module_lands_under_its_installed_name(names: set[str]) -> None:
    # The package list in pyproject.toml is written out, not found: a new subpackage that is
    # not added there would be missing from the wheel, and this says which.
    missing = []
    for folder, installed in INSTALLED_AS.items():
        for path in _py_files(ROOT / folder):
            target = f"{installed}/{path.relative_to(ROOT / folder).as_posix()}"
            if target not in names:
                missing.append(f"{path.relative_to(ROOT)} (as {target})")
    assert not missing, "not in the wheel; add the package to [tool.setuptools] packages:\n" + \
        "\n".join(missing)
    for key in ("llmclient/preprocess/__init__.py", "llmclient/speculative/__init__.py",
                "llmclient_bench/__init__.py", "llmclient_bench/__main__.py",
                "llmclient_bench/harness/__init__.py", "llmclient_bench/harness/cli.py",
                "llmclient_bench/fixtures/__init__.py", "llmclient_bench/fixtures/photos.py",
                "llmclient_bench/fixtures/redis.py", "llmclient_bench/server/__init__.py",
                "llmclient_bench/server/__main__.py", "llmclient_bench/server/engine/__init__.py"):
        assert key in names


def test_data_files_and_no_checkout_only_stubs(names: set[str]) -> None:
    assert [d for d in DATA if d not in names] == []
    # llmclient/preprocess.pyi and speculative.pyi only bridge mypy in the checkout; installed,
    # they would shadow the packages for type checkers and point at names that are not there.
    assert "llmclient/preprocess.pyi" not in names
    assert "llmclient/speculative.pyi" not in names


def test_the_compiled_parser_lands_beside_its_codec(names: set[str]) -> None:
    # Optional (no C compiler, no extension), but where this environment built it the wheel
    # has it too, as llmclient.wire._pbparse, next to llmclient/wire/protobuf.py that loads it.
    compiled = [n for n in names
                if n.rsplit("/", 1)[-1].startswith("_pbparse.") and n.endswith((".so", ".pyd"))]
    assert all(n.startswith("llmclient/wire/_pbparse.") for n in compiled), compiled
    if importlib.util.find_spec("llmclient.wire._pbparse") is not None:
        assert len(compiled) == 1, compiled


def test_metadata_names_the_console_scripts(wheel: Path, names: set[str]) -> None:
    with zipfile.ZipFile(wheel) as zf:
        entry_points = zf.read(_dist_info(names, "entry_points.txt")).decode()
        top_level = zf.read(_dist_info(names, "top_level.txt")).decode()
    parser = configparser.ConfigParser()
    parser.read_string(entry_points)
    assert dict(parser["console_scripts"]) == SCRIPTS
    assert set(top_level.split()) == {"llmclient", "llmclient_bench"}


def test_license_is_an_spdx_expression_and_the_build_does_not_warn(wheel: Path, names: set[str]) -> None:
    with zipfile.ZipFile(wheel) as zf:
        metadata = zf.read(_dist_info(names, "METADATA")).decode()
    headers = metadata.split("\n\n", 1)[0].splitlines()
    assert "License-Expression: Apache-2.0" in headers
    assert not any(h.startswith("License: ") for h in headers)  # the deprecated free-text field
    log = (wheel.parent / "build.log").read_text()
    assert "project.license" not in log and "License classifiers are deprecated" not in log, log


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                           "--target", str(target), str(wheel)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return target


def _run_installed(installed: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in an interpreter that sees the installed copy and this environment's
    dependencies, but not the checkout: -S skips site, so the editable install's import hook
    (which maps llmclient.* and llmclient_bench to the checkout) is never set up."""
    deps = sysconfig.get_paths()["purelib"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = os.pathsep.join([str(installed), deps])
    return subprocess.run([sys.executable, "-S", "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_installed_copy_imports_and_runs_its_scripts(installed: Path, tmp_path: Path) -> None:
    code = f"""
import sys
from importlib.metadata import entry_points
import llmclient, llmclient.preprocess, llmclient.speculative, llmclient_bench
import llmclient_bench.server.app, llmclient_bench.scenarios
import llmclient_bench.fixtures.photos, llmclient_bench.fixtures.redis
from llmclient.features.images import ImageSettings
from llmclient.preprocess import ImageError
import llmclient.preprocess as pre
assert pre.ImageError is ImageError
here = {str(installed)!r}
leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('preprocess', 'speculative', 'benchmarks'))
assert not leaked, leaked
outside = sorted(name for name, m in list(sys.modules.items())
                 if name.split('.')[0] in ('llmclient', 'llmclient_bench')
                 and getattr(m, '__file__', None) and not m.__file__.startswith(here))
assert not outside, outside
scenarios, errors = llmclient_bench.scenarios.discover()
assert scenarios and not errors, errors
for name in {sorted(SCRIPTS)!r}:
    (ep,) = entry_points(group='console_scripts', name=name)
    main = ep.load()
    assert main.__module__.startswith('llmclient_bench'), main.__module__
    try:
        main(['--help'])
    except SystemExit as exc:
        assert exc.code in (0, None), exc.code
print('ok')
"""
    proc = _run_installed(installed, code, tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.split()[-1] == "ok"
    assert "usage:" in proc.stdout


def test_installed_package_runs_as_a_module(installed: Path, tmp_path: Path) -> None:
    # python -m llmclient_bench: the package's __main__ hands over to the harness's command line,
    # which names itself after the package it was run as.
    code = ("import runpy, sys; sys.argv = ['x', '--help']\n"
            "runpy.run_module('llmclient_bench', run_name='__main__')")
    proc = _run_installed(installed, code, tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.startswith("usage: python -m llmclient_bench"), proc.stdout[:200]


def test_installed_bench_starts_its_reference_server(installed: Path, tmp_path: Path) -> None:
    # llmclient_bench.harness.serverproc runs the server as a module of its own package (here
    # llmclient_bench.server, from a checkout benchmarks.server), with its profile and vocabulary
    # from package data; llmclient from the same copy talks to it.
    code = f"""
import llmclient
from llmclient_bench.harness.serverproc import start_server
with start_server('zero') as server:
    client = llmclient.OpenAI(base_url=server.base_url, api_key='bench-key')
    reply = client.chat.completions.create(model=server.model() or '',
                                           messages=[{{'role': 'user', 'content': 'hi'}}],
                                           max_tokens=5)
    assert reply.choices[0].message.content, reply
    client.close()
assert llmclient.__file__.startswith({str(installed)!r}), llmclient.__file__
print('ok')
"""
    proc = _run_installed(installed, code, tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.split()[-1] == "ok"


def _imports(path: Path) -> Iterator[tuple[int, str, int]]:
    """(line, absolute module or the relative import's module, level) of each import."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, 0
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, node.module or "", node.level


def test_folders_refer_to_themselves_relatively_and_preprocess_speculative_stay_leaves() -> None:
    # Inside preprocess/, speculative/ and benchmarks/ an absolute import of their own folder
    # name would work from a checkout and fail installed (or load the module twice), and a
    # relative import may not climb out of its folder. preprocess and speculative import
    # nothing of llmclient; nothing anywhere imports them under their folder names.
    bad = []
    for folder in ("preprocess", "speculative", "benchmarks"):
        for path in _py_files(ROOT / folder):
            depth = len(path.relative_to(ROOT / folder).parts)  # 1: a module at the top
            for line, module, level in _imports(path):
                top = module.split(".")[0]
                where = f"{path.relative_to(ROOT)}:{line}"
                if level == 0 and top in ("preprocess", "speculative", "benchmarks"):
                    bad.append(f"{where}: absolute import of {module}")
                elif level > depth:
                    bad.append(f"{where}: relative import climbs out of {folder}/")
                elif level == 0 and top == "llmclient" and folder != "benchmarks":
                    bad.append(f"{where}: {folder} is a leaf package, imports {module}")
    for folder in ("llmclient", "tests", "examples", "scripts"):
        for path in _py_files(ROOT / folder):
            for line, module, level in _imports(path):
                if level == 0 and module.split(".")[0] in ("preprocess", "speculative"):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: import llmclient.{module} instead")
    assert not bad, "\n".join(bad)
