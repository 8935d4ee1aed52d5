# The two commands a new contributor needs: `make serve` and `make test`. Everything else is set up on the way.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
export SITE_URL ?= http://$(HOST):$(PORT)/
export NO_MKDOCS_2_WARNING := 1
# Python keeps its bytecode caches (__pycache__/, gitignored). Where the environment sets PYTHONDONTWRITEBYTECODE,
# every process of a build or a test run (pytest's workers, the build's, each notebook's kernel, each CLI test)
# would compile calc and the tests again: 0.4 s for calc alone, 5 s more for pytest's collection.
unexport PYTHONDONTWRITEBYTECODE
# Two browsers, both Debian's. `make bench` measures what readers get in the desktop browser (chromium); the tests
# drive chromium-headless-shell, the same Blink and V8 without the desktop browser's UI layers (what Playwright runs
# for headless by default), at half the CPU of a page load (tests/browser/conftest.py: CHROMIUM_CANDIDATES).
# CHROMIUM_PATH, when set, is the browser of both.
CHROMIUM ?= $(or $(shell command -v chromium 2>/dev/null),$(shell command -v chromium-browser 2>/dev/null),/usr/bin/chromium)
HEADLESS_SHELL ?= $(or $(shell command -v chromium-headless-shell 2>/dev/null),/usr/bin/chromium-headless-shell)
BENCH_CHROMIUM := $(or $(CHROMIUM_PATH),$(CHROMIUM))
TEST_CHROMIUM := $(or $(CHROMIUM_PATH),$(HEADLESS_SHELL))

.PHONY: help setup serve build test test-fresh test-clock test-fast test-browser bench lock chromium headless-shell clean

help:
	@echo "make serve   build the site and serve it at $(SITE_URL) (rebuilds on every edit)"
	@echo "make test    run every test: calc, doctests, the site, Pyodide parity, headless Chromium"
	@echo "             (a browser test whose code and site sources are unchanged since it passed is a cached pass: tests/browser_cache.py)"
	@echo "make test-fresh  the same, rerunning every browser test"
	@echo "make build   build the site into site/"
	@echo "make bench   benchmarks: the simulator, the site in Chromium, the edit loop (prints figures, writes bench-results/)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall when the pins change; the stamp records what was installed. --no-compile: pip would byte-compile all
# 5,700 modules it installs (14 s of a 39 s install); Python compiles and keeps those a run imports, when it imports them.
$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-compile --no-deps -e .
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

setup: $(VENV)/.installed node_modules/.installed

# --dirty: a rebuild redoes the pages whose inputs changed (hooks/site_hooks.py adds those whose cached facts,
# widgets or notebooks a calc edit changed, and every page when the hooks, the theme or the nav change).
serve: setup
	$(BIN)/mkdocs serve --strict --dirty --dev-addr $(HOST):$(PORT)

build: setup
	$(BIN)/mkdocs build --strict --site-dir site

# A browser from Debian's package of the same name (chromium, chromium-headless-shell), installed when we run as
# root, else the command to run.
define install_browser
	@if [ -x "$(1)" ]; then exit 0; fi; \
	package="$$(basename "$(1)")"; \
	case "$$package" in chromium|chromium-headless-shell) ;; *) echo "No browser at $(1)"; exit 1;; esac; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "Installing Debian's $$package"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$$package" >/dev/null; \
	else \
	  echo "No $$package found. Install it with: sudo apt-get install -y $$package"; exit 1; \
	fi
endef
chromium:
	$(call install_browser,$(BENCH_CHROMIUM))
headless-shell:
	$(call install_browser,$(TEST_CHROMIUM))

# Tests serve the built site on their own port, so a `make serve` running beside them is left alone.
# It builds through the build cache (build/calc-cache), like `make build`; its duration, build included, goes to
# bench-results/test-time.json for `make bench`.
test: export SITE_URL := http://127.0.0.1:8765/
test: export CHROMIUM_PATH := $(TEST_CHROMIUM)
test: test-clock build headless-shell
	@status=0; $(BIN)/python -m pytest -n 2 --dist loadgroup -q $(PYTEST_ARGS) || status=$$?; \
	$(BIN)/python bench/bench_loop.py record-test "$$(cat build/test-started)" $$status; exit $$status

# Every browser test reruns, none reused from build/test-cache (CI never reuses either: CI is set there).
test-fresh: export FRESH := 1
test-fresh: test

test-clock:
	@mkdir -p build && date +%s.%N > build/test-started

test-fast: setup
	$(BIN)/python -m pytest -q -m "not site and not browser and not pyodide" $(PYTEST_ARGS)

# Benchmarks print figures and write bench-results/*.json; they measure, they do not assert.
bench: export SITE_URL := http://127.0.0.1:8766/
bench: export CHROMIUM_PATH := $(BENCH_CHROMIUM)
# Each runs even if one before it failed (a failed measurement prints FAILED and its reason); the exit status
# says whether any failed. The planner's comes after the site's, which builds the site its browser part times.
BENCH_STEPS := bench/bench_sim.py bench/bench_site.py bench/bench_plan.py bench/bench_loop.py "scripts/reading_time.py --site site"
bench: setup chromium
	@failed=""; for step in $(BENCH_STEPS); do \
	  echo "== $$step"; $(BIN)/python $$step || failed="$$failed $${step%% *}"; \
	done; \
	if [ -n "$$failed" ]; then echo "make bench: failed:$$failed (the others ran)"; exit 1; fi

# Re-resolve the Python pins from requirements.in in a throwaway venv.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet -r requirements.in
	( echo "# Pinned by 'make lock' (pip freeze of a fresh venv with requirements.in). Edit requirements.in, not this file."; \
	  .lock-venv/bin/pip freeze --exclude-editable ) > requirements.txt
	rm -rf .lock-venv

clean:
	rm -rf site bench-results build/calc-cache
