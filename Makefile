# The developer interface: `make run` starts the whole stack, `make test` passes the tests.
SHELL := /bin/bash
PY ?= python3
UV := $(PY) -m uv
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install run test lint bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml uv.lock shared/pyproject.toml $(wildcard services/*/pyproject.toml)
	@$(PY) -m uv --version >/dev/null 2>&1 || $(PY) -m pip install --quiet uv
	$(UV) sync --all-packages --frozen
	@touch $@

run: install
	$(BIN)/askgate run

test: install
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy shared/src services

bench: install
	$(BIN)/python bench/bench.py

clean:
	rm -rf $(VENV) .run .pytest_cache .mypy_cache .ruff_cache
