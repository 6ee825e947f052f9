"""The self-contained HTML report (DESIGN §8); it only reads results."""

from blurbflow.report.render import render_report

__all__ = ["render_report"]
