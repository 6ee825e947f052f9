"""Results: the fields of a cell's result.json (schema), the cells frame (aggregate), which
cells a study has (study), the per-study tables (tables) written as CSV/Markdown/LaTeX (formats)
and the statistics beside them (stats: recipe vs baseline tests, failure rates, compute spent)."""

from blurbflow.results.aggregate import load_cells, best_grid_points, write_cells
from blurbflow.results.formats import format_table, write_table
from blurbflow.results.stats import baseline_tests, compute_spent, failure_rates
from blurbflow.results.tables import study_table

__all__ = [
    "baseline_tests",
    "compute_spent",
    "failure_rates",
    "format_table",
    "load_cells",
    "best_grid_points",
    "study_table",
    "write_cells",
    "write_table",
]
