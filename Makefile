# Everything runs from the project's own virtual environment, made on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install dist demo test test-fast test-late-nodes lint bench soak parts clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@# compat: a plain path entry; the default editable finder costs every `nvq` call ~30 ms
	$(PY) -m pip install -q -e '.[dev]' --config-settings editable_mode=compat
	@# Byte-compile even where PYTHONDONTWRITEBYTECODE is set: every `nvq` call is a
	@# fresh interpreter, and compiling the CLI's imports each time costs ~50 ms.
	$(PY) -m compileall -q -j 0 $(VENV)/lib nvq nvq_runner >/dev/null
	touch $(STAMP)

# A wheel to install nvq for good (`pipx install dist/nvq-*.whl`, `uv tool install
# dist/nvq-*.whl`): pure Python, runner included; the build backend comes from the
# index pip is configured for.
DIST ?= dist
dist: install
	$(PY) -m pip wheel -q --no-deps -w $(DIST) .

# The real parts the tests run (OpenSSH, Slurm and munge, fuse3, tmux, chromium, podman,
# runc, busybox), installed with apt where missing; no apt call when all are there.
parts:
	@scripts/test-parts.sh

demo: install
	$(PY) scripts/demo.py

# The whole test, on a fresh machine too: every part installed first, so a test skips
# only where a part truly cannot run here, and says why (-ra prints the reasons).
# Bytecode for every process the tests start, and pytest's rewritten test modules
# kept: where PYTHONDONTWRITEBYTECODE is set (this project's machines set it), each
# `nvq` call would compile every module changed since `make install` again, and each
# xdist worker would rewrite and compile all the test modules (12 s of CPU, 5 s with
# the cache). compileall is a no-op when the bytecode is fresh.
COMPILED := $(PY) -m compileall -q -j 0 nvq nvq_runner >/dev/null
WITH_BYTECODE := env -u PYTHONDONTWRITEBYTECODE

# The tests mostly wait on real processes and sshd nodes: 4 workers on 2 cores.
# `make test WORKERS=8`: the same suite under load (every test must still pass).
WORKERS ?= 4

test: install parts
	@$(COMPILED)
	$(WITH_BYTECODE) $(PY) -m pytest -q -p no:cacheprovider -n $(WORKERS)

# The inner loop: the pure, store and in-process tests, none that drives the `nvq` CLI
# as a process or starts sshd/Slurm (those carry the `e2e` mark, set in tests/conftest.py).
# `time make test-fast`, 2026-12-01: 802 tests in 50 s on 2 cores at load 2; 905 tests in
# 5 min 22 s at load 20 (eight sessions' suites at once), the slowest two being the
# hypothesis property tests (placement 55 s, pending groups 25 s), which therefore draw an
# eighth of their examples here (NVQ_TEST_FAST=1, tests/property_budget.py); `make test` draws them all.
# 2026-12-01 23:40: 1,002 tests in 60 s (49 s of CPU) at load 2.8 with the bytecode kept,
# 71 s (53 s of CPU) at load 3.1 without.
# 2026-12-02 02:35: 1,080 tests in 51 s (49 s of CPU) at load 1.3-1.6.
# 2026-12-05 03:31: 1,236 tests in 42 s (38 s of CPU) at load 1.4.
test-fast: install
	@$(COMPILED)
	NVQ_TEST_FAST=1 $(WITH_BYTECODE) $(PY) -m pytest -q -p no:cacheprovider -n 2 -m "not e2e"

# The whole suite with every fake node's first card read 4 s slow (a slow driver's
# nvmlInit), so that each runner's hello comes after a submit has stopped waiting for it
# (submit_checks.REPORT_WAIT, 3 s): a test that asks what only a reported node answers
# before waiting for one fails here. 2026-12-02: 1,671 passed in 11 min 37 s.
test-late-nodes:
	NVQ_TEST_SLOW_INIT=4 $(MAKE) test

# The benchmarks too: scripts run from bench/, whose `common` is a sibling module there.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	MYPYPATH=bench $(VENV)/bin/mypy --strict bench/*.py

bench: install parts
	cd bench && ../$(PY) run_all.py

# A chaos soak (bench/soak.py): faults for MINUTES, then the invariants; one JSON line.
# SOAK_ARGS adds options, e.g. SOAK_ARGS="--at-least link_freeze=10 --at-least total=60".
MINUTES ?= 5
SOAK_ARGS ?=
soak: install parts
	cd bench && ../$(PY) soak.py --minutes $(MINUTES) $(SOAK_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
