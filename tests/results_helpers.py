"""Cells read into the cells frame straight from result.json files, without a config: what
tests and benchmarks compare with (the aggregate rule's `blurbflow.results.aggregate.aggregate`
also checks each cell against its job's options and manifest)."""

from __future__ import annotations

import os
from collections.abc import Iterable

import pandas as pd

from blurbflow.results.aggregate import COLUMNS, load_cell, normalise_types


def load_cells(paths: Iterable[str | os.PathLike]) -> pd.DataFrame:
    """One row per cell (see COLUMNS), in the order of `paths`."""
    frame = pd.DataFrame([load_cell(path) for path in paths], columns=COLUMNS)
    return normalise_types(frame)
