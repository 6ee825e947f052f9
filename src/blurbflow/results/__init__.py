"""Results: the cells frame (aggregate), the per-study tables (tables) and the statistics
beside them (stats: recipe vs baseline tests, failure rates, compute spent)."""

from blurbflow.results.aggregate import load_cells, select_hparams, write_cells
from blurbflow.results.stats import baseline_tests, compute_spent, failure_rates
from blurbflow.results.tables import format_table, study_table, write_table

__all__ = [
    "baseline_tests",
    "compute_spent",
    "failure_rates",
    "format_table",
    "load_cells",
    "select_hparams",
    "study_table",
    "write_cells",
    "write_table",
]
