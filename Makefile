# Two entry points: `make serve` (the site) and `make test` (everything CI checks).
# Both create .venv on first use and are cheap to run again: each install step is redone only
# when its lock file (requirements/*.lock) or pyproject.toml changes.
#
# Every package comes from a lock with hashes, so a fresh clone installs the same versions
# whatever the registry publishes next. `make lock` refreshes the locks on purpose;
# `make test-latest` runs the suite with the newest allowed versions and no lock.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1:8000
BASE   := $(VENV)/.kbgen-base
DEV    := $(VENV)/.kbgen-dev
# 1: install from requirements/*.lock; 0: the newest versions pyproject.toml allows (test-latest)
LOCKED ?= 1
PIP_PIN   := pip==26.3
LOCK_TOOL := pip-tools==7.6.2
# CPU build; comes from a local wheel here. Never install an unpinned torch: that pulls the
# newest CUDA build, several GB.
TORCH  := torch==2.13.0
PIP    := $(BIN)/python -m pip install --quiet
# Material prints an end-of-life banner on every build; it says nothing about this KB.
export NO_MKDOCS_2_WARNING := 1

ifeq ($(LOCKED),1)
INSTALL_BASE = $(PIP) --require-hashes -r requirements/serve.lock
INSTALL_DEV  = $(PIP) --require-hashes -r requirements/test.lock
INSTALL_SELF = $(PIP) --no-deps --no-build-isolation -e .
else
INSTALL_BASE = $(PIP) --upgrade --upgrade-strategy eager -e .
INSTALL_DEV  = $(PIP) --upgrade --upgrade-strategy eager -e '.[test,ray]' '$(TORCH)' -r requirements/build.in
INSTALL_SELF = true
endif

.PHONY: serve test test-latest test-under-load lint typecheck unit validate site-check bench lock clean help zensical

help:
	@echo "make serve            set up .venv and serve the KB site on http://$(HOST) (live reload)"
	@echo "make test             set up .venv from the locks; run lint, types, KB checks, tests"
	@echo "make test-latest      the same with the newest allowed versions, no lock (.venv-latest)"
	@echo "make test-under-load  the tests while two CPU hogs keep the cores busy"
	@echo "make lock             refresh requirements/*.lock (newest versions the ranges allow)"
	@echo "make zensical         set up .zvenv with Zensical from its lock (see the README)"
	@echo "make bench            run the benchmarks in benchmarks/ (prints figures and ratios)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) '$(PIP_PIN)'

$(BASE): pyproject.toml requirements/serve.lock | $(BIN)/python
	$(INSTALL_BASE)
	$(INSTALL_SELF)
	@touch $@

$(DEV): pyproject.toml requirements/test.lock $(BASE)
	$(INSTALL_DEV)
	$(INSTALL_SELF)
	-@sh scripts/ensure-chromium.sh
	-@sh scripts/ensure-fleet-services.sh
	@touch $@

serve: $(BASE)
	$(BIN)/kbgen serve --dev-addr $(HOST)

lint: $(DEV)
	$(BIN)/ruff check src tests benchmarks kb/probes
	$(BIN)/ruff format --check src tests benchmarks kb/probes

typecheck: $(DEV)
	$(BIN)/mypy

validate: $(DEV)
	$(BIN)/kbgen validate --strict

site-check: $(DEV)
	$(BIN)/mkdocs build --strict --site-dir build/site-check

unit: $(DEV)
	$(BIN)/python -m pytest

test: lint typecheck validate site-check unit

# The newest versions pyproject.toml allows, resolved afresh on every run.
test-latest:
	rm -f .venv-latest/.kbgen-base .venv-latest/.kbgen-dev
	$(MAKE) test VENV=.venv-latest LOCKED=0

# The suite at a load of about 8 on 2 cores, as on a shared CI runner.
test-under-load: $(DEV)
	sh scripts/under-load.sh $(MAKE) test

lock:
	test -x .venv-lock/bin/pip-compile || ($(PYTHON) -m venv .venv-lock && \
	  .venv-lock/bin/python -m pip install --quiet '$(PIP_PIN)' '$(LOCK_TOOL)')
	CUSTOM_COMPILE_COMMAND="make lock" .venv-lock/bin/pip-compile --quiet --upgrade \
	  --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links \
	  --extra test --extra ray --output-file requirements/test.lock \
	  pyproject.toml requirements/build.in requirements/test.in
	CUSTOM_COMPILE_COMMAND="make lock" .venv-lock/bin/pip-compile --quiet \
	  --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links \
	  --constraint requirements/test.lock --output-file requirements/serve.lock \
	  pyproject.toml requirements/build.in
	CUSTOM_COMPILE_COMMAND="make lock" .venv-lock/bin/pip-compile --quiet \
	  --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links \
	  --output-file requirements/zensical.lock requirements/zensical.in

# Zensical in a venv of its own (its pins apart from kbgen's), from its lock with hashes.
ZVENV := .zvenv
zensical: $(ZVENV)/.kbgen-zensical
$(ZVENV)/.kbgen-zensical: requirements/zensical.lock
	test -x $(ZVENV)/bin/python || $(PYTHON) -m venv $(ZVENV)
	$(ZVENV)/bin/python -m pip install --quiet '$(PIP_PIN)'
	$(ZVENV)/bin/python -m pip install --quiet --require-hashes -r requirements/zensical.lock
	@touch $@

bench: $(DEV)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .venv-latest .venv-lock $(ZVENV) build site .pytest_cache .mypy_cache .ruff_cache
