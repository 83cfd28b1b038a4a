# Two entry points: `make serve` (the site) and `make test` (everything CI checks).
# Both create .venv on first use and are cheap to run again: each install step is redone only
# when pyproject.toml changes.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1:8000
BASE   := $(VENV)/.kbgen-base
DEV    := $(VENV)/.kbgen-dev
# CPU build; comes from a local wheel here. Never install an unpinned torch: that pulls the
# newest CUDA build, several GB.
TORCH  := torch==2.13.0
# Material prints an end-of-life banner on every build; it says nothing about this KB.
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve test lint typecheck unit validate site-check bench clean help

help:
	@echo "make serve   set up .venv and serve the KB site on http://$(HOST) (live reload)"
	@echo "make test    set up .venv with test tools and CPU torch; run lint, types, KB checks, tests"
	@echo "make bench   run the benchmarks in benchmarks/ (prints figures and ratios)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(BASE): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(DEV): pyproject.toml $(BASE)
	$(BIN)/python -m pip install --quiet -e '.[test]' '$(TORCH)'
	-@$(BIN)/python -m pip install --quiet -e '.[ray]' || echo "Ray did not install: the Ray fleet test will be skipped"
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

bench: $(DEV)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build site .pytest_cache .mypy_cache .ruff_cache
