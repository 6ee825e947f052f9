# Two commands do everything: `make demo` and `make test` (both run `make setup` first).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= 2
# Rules call the `blurbflow` entry point: put the venv first on PATH for snakemake and pytest.
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: setup demo test lint clean

setup: $(STAMP)

# Re-install only when the package metadata changes; torch first so the pinned CPU wheel is used.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: setup
	$(BIN)/snakemake --configfile config/demo.yaml --cores $(CORES) --keep-going all
	@echo "Report: results/report.html"

test: setup
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/snakemake --lint --configfile config/demo.yaml

clean:
	rm -rf results resources .snakemake
