"""Results: the cells frame (aggregate), which cells a study has (study_cells), the per-study
tables (tables, their layout in layout) written as CSV/Markdown/LaTeX (formats) and the
statistics beside them (stats: recipe vs baseline tests, failure rates, compute spent).

The names below are imported when first used (PEP 562): importing a light submodule such as
`blurbflow.results.layout` (the Snakefile does, on every start) does not pull in pandas."""

from __future__ import annotations

import importlib

_WHERE = {
    "best_grid_points": "aggregate",
    "write_cells": "aggregate",
    "format_table": "formats",
    "write_table": "formats",
    "baseline_tests": "stats",
    "compute_spent": "stats",
    "failure_rates": "stats",
    "study_table": "tables",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
