"""The report's "Reproduction" view of a study: its entries beside the published values
(results/reproduction.py) as text at the printed precision, with each entry's verdict and the
counts of each."""

from __future__ import annotations

import math

import pandas as pd

from blurbflow.results.layout import study_layout
from blurbflow.results.reproduction import reproduction_summary


def _number(value, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{float(value):.{digits}f}"


INTERVALS = {
    "mean": "the 95% t-interval of the mean over the seeds",
    "median": (
        "the distribution-free order-statistic interval of the median over the seeds (95%; "
        "with 5 seeds or fewer the seeds' range, its coverage given)"
    ),
}


def _signed(value, digits: int) -> str:
    text = _number(value, digits)
    return f"+{text}" if text != "–" and float(value) > 0 else text


def reproduction_view(frame: pd.DataFrame, study: dict) -> dict | None:
    """The study's entries beside the published values (results/reproduction.py), as text at
    the printed precision; None when the study has no published value."""
    if not frame["published"].notna().any():
        return None
    digits = int(frame.attrs.get("decimals") or 0)
    rows_dim, column_dims = study_layout(study)
    rows = []
    for entry in frame.to_dict("records"):
        published = entry["published"]
        low, high, level = entry["low"], entry["high"], entry["level"]
        span = "–"
        if pd.notna(low):
            span = f"[{_number(low, digits)}, {_number(high, digits)}]"
            span += f" ({100 * level:.1f}%)" if level < 0.95 else ""
        seeds = entry["seeds_to_decide"]
        rows.append(
            {
                "row": entry["row"],
                "column": entry["column"],
                "task": entry["task"],
                "published": "not printed" if pd.isna(published) else _number(published, digits),
                "ours": _number(entry["ours"], digits),
                "n": int(entry["n"]),
                "interval": span,
                "delta": _signed(entry["delta"], digits),
                "margin": f"±{_number(entry['margin'], max(digits, 1))}",
                "verdict": "–" if pd.isna(entry["verdict"]) else entry["verdict"],
                "seeds": "–" if pd.isna(seeds) else int(seeds),
                "note": "" if pd.isna(entry["note"]) else entry["note"],
                "contradicted": "contradicted" in str(entry["note"]),
            }
        )
    statistic = frame.attrs.get("statistic", "mean")
    return {
        "rows": rows,
        "summary": reproduction_summary(frame),
        "source": frame.attrs.get("source", ""),
        "statistic": statistic,
        "interval": INTERVALS.get(statistic, "none (no interval is defined for this statistic)"),
        "corner": rows_dim,
        "column_header": " / ".join(column_dims) or "column",
        "show_task": "task" not in (rows_dim, *column_dims),
    }
