# One entry point for people and CI. `make bench` and `make test` set everything up on a
# fresh machine (virtualenv, Python packages, redis-server, nginx) and then run.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
ARGS   ?=

.PHONY: setup bench bench-full bench-anthropic test test-interop test-torch lint typecheck check ci clean system-deps

$(STAMP): pyproject.toml llmclient/wire/_pbparse.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[bench,test]'
	touch $(STAMP)

setup: $(STAMP) system-deps

system-deps:
	@bash scripts/ensure-system-deps.sh

## The main job: the savings benchmark against the embedded reference server. `make bench` is the
## quick pass (about 275 s of scenarios on 2 cores; every row it shows decided, the scenarios that
## need longer named in its headline); `make bench-full` (or `make bench ARGS=--full`) is the full
## suite (~45 minutes).
bench: setup
	$(PY) -m benchmarks --quick $(ARGS)

bench-full: setup
	$(PY) -m benchmarks --full $(ARGS)

## The quick pass on the Messages API: llmclient's Anthropic face against the official anthropic client.
bench-anthropic: setup
	$(PY) -m benchmarks --quick --api anthropic $(ARGS)

## The test suite (real reference server, real Redis, real SQLite, real Pillow, real uvicorn and
## nginx in front of it, a hostile HTTP/2 peer). The slow interop suite is `make test-interop`.
## Four workers (pytest-xdist) even on 2 cores: most tests wait on a server, a stall or a
## deadline rather than compute (the serial run used 3 CPU-minutes in 11 wall-minutes).
## TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 4
test: setup
	$(PY) -m pytest -q -m "not interop" -n $(TEST_WORKERS) $(ARGS)

## The slow interop suite (pytest -m interop): a real third-party inference server
## (llama-cpp-python's, compiled from source on first install: ~8-10 min on 2 cores, then
## served from pip's wheel cache in seconds).
test-interop: setup
	$(PY) -m pip install -q --disable-pip-version-check -e '.[interop]'
	$(PY) -m pytest -q -m interop $(ARGS)

## The torch engine's tests (real forward passes on CPU, tiny config). Installs the CPU build of
## torch (TORCH_INDEX) and transformers into the venv first; when that cannot be done here it
## says why and skips, as the suite itself skips these tests without torch.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
test-torch: setup
	@if $(PY) -c 'import torch, transformers' 2>/dev/null || \
	   $(PY) -m pip install -q --disable-pip-version-check --retries 1 --timeout 30 \
	     --extra-index-url $(TORCH_INDEX) 'torch>=2.1' 'transformers>=4.40'; then \
	  $(PY) -m pytest -q tests/server/test_torch_engine.py tests/server/test_calibrate.py; \
	else \
	  echo "torch engine tests skipped: could not install torch (CPU build) from $(TORCH_INDEX) or PyPI"; \
	fi

lint: $(STAMP)
	$(VENV)/bin/ruff check llmclient preprocess speculative benchmarks tests examples scripts
	$(PY) scripts/unasync.py --check
	$(VENV)/bin/lint-imports --no-cache
	$(PY) scripts/signatures.py --check

typecheck: $(STAMP)
	$(VENV)/bin/mypy

check: lint typecheck test

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache results
