"""Results: the cells frame (aggregate) and the per-study tables (tables)."""

from blurbflow.results.aggregate import load_cells, select_hparams, write_cells
from blurbflow.results.tables import format_table, study_table, write_table

__all__ = [
    "format_table",
    "load_cells",
    "select_hparams",
    "study_table",
    "write_cells",
    "write_table",
]
