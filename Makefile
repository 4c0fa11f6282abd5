# The developer interface: `make run` starts the whole stack, `make test` passes the tests.
SHELL := /bin/bash
PY ?= python3
UV := $(PY) -m uv
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install browser run test lint lint-types bench chaos clean

install: $(VENV)/.installed

# --compile-bytecode: where PYTHONDONTWRITEBYTECODE is set, nothing ever caches the
# dependencies' bytecode, and every process compiles what it imports again (aiogram alone:
# 1.4 s of CPU per Telegram worker started).
$(VENV)/.installed: Makefile pyproject.toml uv.lock $(wildcard shared/pyproject.toml shared/*/pyproject.toml services/*/pyproject.toml)
	@$(PY) -m uv --version >/dev/null 2>&1 || $(PY) -m pip install --quiet uv
	$(UV) sync --all-packages --frozen --compile-bytecode
	@touch $@

# The web UI tests drive Debian's Chromium (Playwright never downloads a browser); a
# Devanagari font lets the Hindi pages render. Needs root and apt; may take minutes.
CHROMIUM := /usr/bin/chromium
browser:
	@if [ ! -x $(CHROMIUM) ] || ! fc-list 2>/dev/null | grep -qi devanagari; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
			--no-install-recommends chromium fonts-lohit-deva; \
	fi

run: install
	$(BIN)/askgate run

# In parallel: one pytest-xdist worker more than there are cores (the tests spend much of
# their time waiting for the processes they start: on 2 idle cores 2 workers took 118 s,
# 3 took 97 s, 4 took 107 s), each with its own redis-server; every test has a Redis
# database of its own (docs/testing.md). TEST_WORKERS=0 runs in one process. Bytecode is cached (in the gitignored __pycache__) even where
# PYTHONDONTWRITEBYTECODE is set: otherwise every service process a test starts compiles
# askgate's own modules again, and each xdist worker rewrites every test module.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: install browser
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(MAKE) --no-print-directory lint-types

lint-types: install
	$(BIN)/mypy shared/src shared/client/src services tests bench chaos

# The benchmark report (a few minutes): docs/benchmarks.md and bench/out/*.json.
# `make bench BENCH_ARGS=--quick` is a smoke run of a few seconds per figure.
bench: install
	$(BIN)/python -m bench $(BENCH_ARGS)

# Longer than `make test`: Schemathesis with many examples per operation, 10,000
# three-way races (make test runs 1,000) and 1,000 examples per property test (make test
# tries 100), then the chaos driver (kill -9 and restarts
# under a mixed workload), which writes docs/reliability.md, and the same on a 3-master
# Redis Cluster with two processes of each channel worker (docs/reliability-cluster.md).
CHAOS_S ?= 120
chaos: install
	ASKGATE_FUZZ_EXAMPLES=300 ASKGATE_RACES=10000 ASKGATE_PROPERTY_EXAMPLES=1000 \
		$(BIN)/python -m pytest -q -o timeout=1200 tests/integration/test_schema_fuzz.py \
		tests/integration/test_races.py tests/unit/test_parser.py \
		tests/unit/test_result_and_render.py tests/unit/test_validation.py
	$(BIN)/python -m chaos --duration $(CHAOS_S) --report docs/reliability.md
	$(BIN)/python -m chaos --duration $(CHAOS_S) --cluster --replicas 2 \
		--report docs/reliability-cluster.md

clean:
	rm -rf $(VENV) .run .pytest_cache .mypy_cache .ruff_cache
