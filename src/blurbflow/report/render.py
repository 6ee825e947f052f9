"""The HTML report: one self-contained file — inline CSS and SVG, no network needed
to view it — built only from the cells frame, the studies and the provenance."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined

from blurbflow.io import write_text_atomic
from blurbflow.metrics.blurb import types_present
from blurbflow.report.curves import task_curves
from blurbflow.results.aggregate import STATUSES
from blurbflow.results.selection import shown_study
from blurbflow.results.stats import baseline_tests, compute_spent, failure_rates
from blurbflow.results.tables import (
    DIMS,
    STUDY_COLUMNS,
    blurb_overview,
    column_labels,
    entry_label,
    entry_text,
    in_study,
    ordered_tasks,
    study_cells,
    study_layout,
    study_seeds,
    study_table,
    table_entries,
)

MAX_PROBLEM_ROWS = 1000  # failed/diverged cells listed one by one; the rest are counted
# The overview shows the BLURB table of studies spanning at least this many task types (the
# BLURB-wide comparisons); narrower ablations show their partial BLURB in their own table.
OVERVIEW_MIN_TYPES = 3


def _number(value, digits: int = 1) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{float(value):.{digits}f}"


def _p_value(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.3f}" if value >= 0.001 else "<0.001"


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("blurbflow", "report/templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["number"] = _number
    env.filters["p_value"] = _p_value
    return env


def flatten(mapping: Mapping, prefix: str = "") -> list[tuple[str, str]]:
    """Nested provenance as ('versions.torch', '2.13.0') pairs, in the given order."""
    pairs = []
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            pairs += flatten(value, f"{name}.")
        elif isinstance(value, list | tuple):
            pairs.append((name, ", ".join(str(v) for v in value)))
        else:
            pairs.append((name, "" if value is None else str(value)))
    return pairs


def status_counts(cells: pd.DataFrame) -> dict[str, int]:
    counts = cells["status"].value_counts() if len(cells) else pd.Series(dtype=int)
    return {status: int(counts.get(status, 0)) for status in STATUSES}


def _table_view(table: pd.DataFrame) -> dict:
    labels = column_labels(table)
    entries = table_entries(table)
    blurb_rows = table.attrs.get("blurb_rows", [])
    rows = []
    for row in table.index:
        cells = []
        for label in labels:
            cell = entries[(row, label)]
            cells.append({"text": entry_text(cell),
                          "median": _number(cell["median"]), "n": int(cell["n"]),
                          "best": bool(cell["best"]), "blurb": label.startswith("BLURB")})
        rows.append({"label": row, "blurb": row in blurb_rows, "cells": cells})
    return {"corner": table.index.name or "", "columns": labels, "rows": rows,
            "best_rule": table.attrs.get("best_rule", "")}


def _overview_view(overview: pd.DataFrame, study: dict) -> dict | None:
    if overview.empty:
        return None
    corner = " / ".join(d for d in ("model", "recipe") if len(study[f"{d}s"]) > 1) or "model"
    blurb = overview.attrs["blurb"]
    columns = [c for c in overview.columns if c != "n"]
    finite = overview[blurb].dropna()
    top = finite.max() if len(finite) > 1 else None
    rows = [{"label": label,
             "scores": [_number(overview.loc[label, c]) for c in columns],
             "n": int(overview.loc[label, "n"]),
             "best": top is not None and overview.loc[label, blurb] == top}
            for label in overview.index]
    return {"columns": columns, "rows": rows, "blurb": blurb, "corner": corner}


STRIP = {"width": 760, "label_width": 320, "row_height": 20, "top": 8, "axis": 22}


def _strip_plot(entries: list[dict], chance: float) -> dict | None:
    """Coordinates of an SVG strip plot: one row per entry, one dot per ok seed (collapsed
    seeds, at or below chance on dev, in red)."""
    values = [s["value"] for e in entries for s in e["seeds"] if s["status"] == "ok"]
    if not values:
        return None
    # The axis spans the seeds, not the chance line: a far-off chance level (0 for NER) would
    # squeeze the spread that the plot is for; collapsed seeds near chance widen it themselves.
    lo, hi = min(values), max(values)
    pad = max((hi - lo) * 0.05, 0.5)
    lo, hi = lo - pad, hi + pad
    left, right = STRIP["label_width"], STRIP["width"] - 12

    def x(value: float) -> float:
        return round(left + (value - lo) / (hi - lo) * (right - left), 1)

    rows = []
    for i, entry in enumerate(entries):
        y = STRIP["top"] + i * STRIP["row_height"] + STRIP["row_height"] / 2
        ok = [s for s in entry["seeds"] if s["status"] == "ok"]
        mean = sum(s["value"] for s in ok) / len(ok) if ok else math.nan
        bad = len(entry["seeds"]) - len(ok)
        rows.append({
            "label": entry["label"], "y": y,
            "points": [{"x": x(s["value"]), "collapsed": s["collapsed"],
                        "title": f"seed {s['seed']}: {s['value']:.2f}"
                        + (" (dev at or below chance)" if s["collapsed"] else "")}
                       for s in ok],
            "mean_x": None if math.isnan(mean) else x(mean),
            "note": f"{bad} without score" if bad else "",
        })
    axis_y = STRIP["top"] + len(entries) * STRIP["row_height"]
    ticks = [{"x": x(v), "label": f"{v:.1f}"} for v in (lo + pad, (lo + hi) / 2, hi - pad)]
    return {
        "width": STRIP["width"], "height": axis_y + STRIP["axis"], "axis_y": axis_y,
        "left": left, "right": right, "rows": rows, "ticks": ticks,
        "chance_x": x(chance) if not math.isnan(chance) and lo <= chance <= hi else None,
    }


def _seed_sections(selected: pd.DataFrame, study: dict, curves: dict) -> list[dict]:
    """Per task: every (model, recipe) entry with every seed's test value or status, and the
    per-epoch dev curves of `curves` (report.curves.task_curves)."""
    by_entry: dict[tuple, dict[int, object]] = {}
    for row in selected.itertuples(index=False):
        if not pd.isna(row.seed):
            by_entry.setdefault((row.model, row.task, row.recipe), {})[int(row.seed)] = row
    sections = []
    for task in ordered_tasks(study["tasks"]):
        at_task = selected[selected["task"] == task]
        observed = {int(s) for s in at_task["seed"].dropna()}
        expected = study_seeds(study, task) or sorted(observed)
        seeds = [s for s in expected if s in observed] or expected
        entries = []
        for model in study["models"]:
            for recipe in study["recipes"]:
                here = by_entry.get((model, task, recipe), {})
                hparams = sorted({str(r.hparams) for r in here.values() if r.hparams})
                entries.append({
                    "label": entry_label(study, model, recipe),
                    "hparams": ", ".join(hparams) or "–",
                    "seeds": [_seed_value(seed, here.get(seed)) for seed in seeds],
                })
        chance = at_task["chance_test"].dropna()
        chance_value = float(chance.mean()) if len(chance) else math.nan
        sections.append({"task": task, "seeds": seeds, "entries": entries,
                         "chance": chance_value, "plot": _strip_plot(entries, chance_value),
                         "curves": curves.get(task)})
    return sections


def _seed_value(seed: int, row) -> dict:
    if row is None:
        return {"seed": seed, "status": "absent", "value": math.nan, "text": "–",
                "collapsed": False}
    value = float(row.test) if not pd.isna(row.test) else math.nan
    if row.status == "ok" and not math.isnan(value):
        collapsed = pd.isna(row.dev) or (
            not pd.isna(row.chance_dev) and float(row.dev) <= float(row.chance_dev)
        )
        return {"seed": seed, "status": "ok", "value": value, "text": f"{value:.1f}",
                "collapsed": bool(collapsed)}
    return {"seed": seed, "status": row.status, "value": value, "text": row.status,
            "collapsed": False}


def _records(frame: pd.DataFrame) -> list[dict]:
    return frame.to_dict("records") if len(frame) else []


def _study_view(cells: pd.DataFrame, name: str, study: dict) -> dict:
    study_layout(study)  # fail early with the study's name in the message
    study = shown_study(study)  # a `choose` group is the one recipe it shows
    light = cells[[c for c in STUDY_COLUMNS if c in cells.columns]]
    everything = light[in_study(light, study)]
    selected = study_cells(everything, study)  # hyperparameters selected once per study
    broad = len(types_present(study["tasks"])) >= OVERVIEW_MIN_TYPES
    return {
        "name": name, "title": study.get("title", name), "baseline": study.get("baseline"),
        "description": study.get("description", ""),
        "table": _table_view(study_table(everything, name, study, selected)),
        "overview": _overview_view(blurb_overview(everything, study, selected), study)
        if broad else None,
        "counts": status_counts(everything),
        "compute": compute_spent(everything, study),
        "failures": _records(failure_rates(everything, study, selected)),
        "seed_sections": _seed_sections(selected, study, task_curves(cells, selected, study)),
        "tests": _records(baseline_tests(everything, study, selected)),
    }


def _problems(cells: pd.DataFrame) -> dict:
    """Failed and diverged cells one by one (with their error), missing cells counted per
    (model, task, recipe) — a study not run yet would otherwise list thousands of rows."""
    columns = [*DIMS, "hparams", "seed", "status", "error"]
    bad = cells[cells["status"].isin(["failed", "diverged"])]
    bad = bad.sort_values(["status", *DIMS, "hparams", "seed"], na_position="last")
    listed = [{c: ("" if pd.isna(r[c]) else r[c]) for c in columns}
              for r in bad.head(MAX_PROBLEM_ROWS).to_dict("records")]
    missing = cells[cells["status"] == "missing"]
    groups = []
    if len(missing):
        keyed = missing.assign(**{d: missing[d].fillna("?") for d in DIMS})
        for (model, task, recipe), group in keyed.groupby(list(DIMS), sort=True):
            groups.append({"model": model, "task": task, "recipe": recipe, "count": len(group),
                           "hparams": ", ".join(sorted({str(h) for h in group["hparams"]
                                                        .dropna()})) or "–"})
    return {"listed": listed, "unlisted": max(len(bad) - MAX_PROBLEM_ROWS, 0),
            "missing": groups, "missing_total": len(missing)}


def _observed(cells: pd.DataFrame) -> list[tuple[str, str]]:
    """Provenance read off the cells themselves: when, where and with what code they ran."""
    def distinct(column: str) -> str:
        values = sorted({str(v) for v in cells[column].dropna()})
        return ", ".join(values) if values else "–"

    versions: dict[str, set[str]] = {}
    for text in cells["versions"].dropna().unique():
        parsed = json.loads(text)
        for package, version in (parsed if isinstance(parsed, dict) else {}).items():
            versions.setdefault(package, set()).add(str(version))
    started, finished = cells["started"].dropna(), cells["finished"].dropna()
    return [
        ("first cell started", str(started.min()) if len(started) else "–"),
        ("last cell finished", str(finished.max()) if len(finished) else "–"),
        ("cell devices", distinct("device")),
        ("git commits", distinct("git_commit")),
        *((f"cells' {package}", ", ".join(sorted(found)))
          for package, found in sorted(versions.items())),
    ]


def render_report(
    cells: pd.DataFrame, studies: dict[str, dict], out_path: str | os.PathLike, provenance: dict
) -> None:
    """Render the report for `studies` (name → study config) to one HTML file, atomically."""
    views = [_study_view(cells, name, study) for name, study in studies.items()]
    context = {
        "title": provenance.get("title", "blurbflow: BLURB benchmark report"),
        "counts": status_counts(cells),
        "total": len(cells),
        "gpu_hours": float(cells["gpu_hours"].sum()) if len(cells) else 0.0,
        "wall_hours": float(cells["wall_seconds"].sum()) / 3600 if len(cells) else 0.0,
        "studies": views,
        "problems": _problems(cells),
        "provenance": [(k, v) for k, v in flatten(provenance) if k != "title"],
        # what the caller's provenance already states is not repeated
        "observed": [(k, v) for k, v in (_observed(cells) if len(cells) else [])
                     if k not in provenance],
    }
    html = environment().get_template("report.html.j2").render(**context)
    write_text_atomic(Path(out_path), html)
