# One entry point for people and CI. `make bench` and `make test` set everything up on a
# fresh machine (virtualenv, Python packages, redis-server) and then run.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
ARGS   ?=

.PHONY: setup bench test lint typecheck check ci clean system-deps

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[bench,test]'
	touch $(STAMP)

setup: $(STAMP) system-deps

system-deps:
	@bash scripts/ensure-system-deps.sh

## The main job: the savings benchmark against the embedded reference server.
bench: setup
	$(PY) -m benchmarks $(ARGS)

## The test suite (real reference server, real Redis, real SQLite, real Pillow).
test: setup
	$(PY) -m pytest -q $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check llmclient preprocess speculative benchmarks tests examples

typecheck: $(STAMP)
	$(VENV)/bin/mypy

check: lint typecheck test

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache results
