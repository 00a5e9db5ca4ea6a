# Everything runs from the project's own virtual environment, made on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install dist demo test lint bench sshd browser clean

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

# The tests start real OpenSSH servers on loopback: install sshd when it is missing.
sshd:
	@test -x /usr/sbin/sshd || { \
	  echo "installing openssh-server (the tests run real sshd nodes on loopback)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq openssh-server openssh-client >/dev/null; }

# The web page's tests drive Debian's chromium (Playwright never downloads its own
# browser here); where it cannot be installed they skip and say why.
browser:
	@command -v chromium >/dev/null || { \
	  echo "installing chromium (the web page tests drive a real browser)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  { $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; } \
	  || echo "chromium could not be installed: the browser tests will be skipped"; }

demo: install
	$(PY) scripts/demo.py

test: install sshd browser
	@# The tests mostly wait on real processes and sshd nodes: 4 workers on 2 cores.
	$(PY) -m pytest -q -p no:cacheprovider -n 4

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: install sshd browser
	cd bench && ../$(PY) run_all.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
