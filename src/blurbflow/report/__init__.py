"""The self-contained HTML report (docs/results.md); it only reads results."""

from blurbflow.report.render import render_report

__all__ = ["render_report"]
