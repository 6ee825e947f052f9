"""The report's "Power" view of a study: each comparison of results/comparisons.py as text."""

from __future__ import annotations

import math

import pandas as pd

from blurbflow.config.study_plan import adaptive_spec
from blurbflow.results.comparisons import label_counts


def _text(value, digits: int = 2) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{float(value):.{digits}f}"


def _failed(failed: int, runs: int) -> str:
    return f"{failed}/{runs}" if runs else "–"


def _interval(r: dict) -> str:
    if not math.isnan(r["low"]):
        return f"[{_text(r['low'])}, {_text(r['high'])}]"
    # seeds enough but every seed on both sides scored the same: no spread, no interval
    return "no spread" if r["n"] > 1 and r["n_reference"] > 1 else "–"


def _side(model: str, recipe: str, kind: str) -> str:
    return recipe if kind == "recipe" else model


def comparisons_view(frame: pd.DataFrame, study: dict) -> dict | None:
    """Rows of text for the template and the label counts; None without comparisons."""
    if frame.empty:
        return None
    delta = float(frame["delta"].iloc[0])
    margin = f"±{delta:g}"
    rows = []
    for r in frame.to_dict("records"):
        label = r["label"]
        rows.append(
            {
                "kind": r["kind"],
                "task": r["task"],
                # the dimension that stays the same, shown once: the model or the recipe
                "within": r["model"] if r["kind"] == "recipe" else r["recipe"],
                "compared": _side(r["model"], r["recipe"], r["kind"]),
                "reference": _side(r["reference_model"], r["reference_recipe"], r["kind"]),
                "n": f"{r['n']} / {r['n_reference']}",
                "difference": _text(r["difference"]),
                "interval": _interval(r),
                "mde": _text(r["mde"]),
                "seeds_needed": "–" if pd.isna(r["seeds_needed"]) else str(int(r["seeds_needed"])),
                "label": label,
                "label_text": f"equivalent within {margin}" if label == "equivalent" else label,
                "failed": _failed(r["failed"], r["runs"]),
                "failed_reference": _failed(r["failed_reference"], r["runs_reference"]),
            }
        )
    return {
        "delta": f"{delta:g}",
        "margin": margin,
        "rows": rows,
        "counts": label_counts(frame),
        "kinds": sorted(set(frame["kind"])),
        "baseline": study.get("baseline"),
        "adaptive": adaptive_plans(study),
    }


def adaptive_plans(study: dict) -> str | None:
    """The study's adaptive seed plans as text, each with its tasks; None with fixed seeds."""
    plans: dict[str, list[str]] = {}
    for task in study["tasks"]:
        if (spec := adaptive_spec(study, task)) is not None:
            plan = f"start {spec['start']}, step {spec['step']}, max {spec['max']}"
            plans.setdefault(f"{plan}, ±{spec['delta']:g}", []).append(task)
    return "; ".join(f"{plan} ({', '.join(tasks)})" for plan, tasks in plans.items()) or None
