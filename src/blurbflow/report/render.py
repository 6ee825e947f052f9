"""The HTML report (DESIGN §8): one self-contained file — inline CSS and SVG, no network needed
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
from blurbflow.results.aggregate import STATUSES
from blurbflow.results.tables import (
    DIMS,
    baseline_tests,
    column_labels,
    format_entry,
    ordered_tasks,
    study_cells,
    study_layout,
    study_seeds,
    study_table,
)


def _number(value, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "–"
    return f"{float(value):.{digits}f}"


def _p_value(value) -> str:
    if value is None or math.isnan(value):
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
    rows = []
    for row in table.index:
        rows.append({
            "label": row,
            "blurb": row in table.attrs.get("blurb_rows", []),
            "cells": [
                {"text": format_entry(table.loc[row, (label, "mean")],
                                      table.loc[row, (label, "std")],
                                      int(table.loc[row, (label, "n")])),
                 "median": _number(table.loc[row, (label, "median")]),
                 "n": int(table.loc[row, (label, "n")]),
                 "best": bool(table.loc[row, (label, "best")])}
                for label in labels
            ],
        })
    return {"corner": table.index.name or "", "columns": labels, "rows": rows}


def _blurb_summary(table: pd.DataFrame) -> list[tuple[str, str]]:
    """(where, 'mean (std)') of every BLURB entry: a BLURB row or BLURB columns."""
    pairs = []
    for row in table.index:
        for label in column_labels(table):
            is_blurb = row in table.attrs.get("blurb_rows", []) or label.startswith("BLURB")
            if not is_blurb:
                continue
            cell = table.loc[row, label]
            where = label if row.startswith("BLURB") else f"{row} / {label}"
            pairs.append((where, format_entry(cell["mean"], cell["std"], int(cell["n"]))))
    return pairs


def _all_study_cells(cells: pd.DataFrame, study: dict) -> pd.DataFrame:
    """Every cell of the study, at every hparams (compute spent, failure rates)."""
    keep = (cells["model"].isin(study["models"]) & cells["task"].isin(study["tasks"])
            & cells["recipe"].isin(study["recipes"]))
    seeds = study_seeds(study)
    if seeds is not None:
        keep &= cells["seed"].isin(seeds)
    return cells[keep]


def _recipe_health(cells: pd.DataFrame, study: dict) -> list[dict]:
    """Status counts and failure rate (diverged + failed over finished cells) per recipe."""
    rows = []
    for recipe in study["recipes"]:
        counts = status_counts(cells[cells["recipe"] == recipe])
        finished = counts["ok"] + counts["diverged"] + counts["failed"]
        bad = counts["diverged"] + counts["failed"]
        rows.append({"recipe": recipe, **counts,
                     "failure_rate": 100.0 * bad / finished if finished else math.nan,
                     "gpu_hours": float(cells.loc[cells["recipe"] == recipe, "gpu_hours"].sum())})
    return rows


STRIP = {"width": 560, "label_width": 200, "row_height": 20, "top": 8, "axis": 22}


def _strip_plot(entries: list[dict], chance: float) -> dict | None:
    """Coordinates of an SVG strip plot: one row per entry, one dot per ok seed."""
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
        rows.append({
            "label": entry["label"], "y": y,
            "points": [{"x": x(s["value"]), "title": f"seed {s['seed']}: {s['value']:.2f}"}
                       for s in ok],
            "mean_x": None if math.isnan(mean) else x(mean),
        })
    axis_y = STRIP["top"] + len(entries) * STRIP["row_height"]
    ticks = [{"x": x(v), "label": f"{v:.1f}"} for v in (lo + pad, (lo + hi) / 2, hi - pad)]
    return {
        "width": STRIP["width"], "height": axis_y + STRIP["axis"], "axis_y": axis_y,
        "left": left, "right": right, "rows": rows, "ticks": ticks,
        "chance_x": x(chance) if lo <= chance <= hi else None,
    }


def _seed_sections(selected: pd.DataFrame, study: dict) -> list[dict]:
    """Per task: every (model, recipe) entry with every seed's test value or status."""
    seeds = study_seeds(study) or sorted(int(s) for s in selected["seed"].dropna().unique())
    sections = []
    for task in ordered_tasks(study["tasks"]):
        at_task = selected[selected["task"] == task]
        entries = []
        for model in study["models"]:
            for recipe in study["recipes"]:
                here = at_task[(at_task["model"] == model) & (at_task["recipe"] == recipe)]
                by_seed = {int(r.seed): r for r in here.itertuples() if not pd.isna(r.seed)}
                label = " / ".join(v for v, d in ((model, "model"), (recipe, "recipe"))
                                   if len(study[f"{d}s"]) > 1) or model
                entries.append({
                    "label": label,
                    "hparams": ", ".join(sorted(here["hparams"].dropna().unique())) or "–",
                    "seeds": [_seed_value(seed, by_seed.get(seed)) for seed in seeds],
                })
        chance = at_task["chance_test"].dropna()
        chance_value = float(chance.mean()) if len(chance) else math.nan
        sections.append({"task": task, "seeds": seeds, "entries": entries,
                         "chance": chance_value, "plot": _strip_plot(entries, chance_value)})
    return sections


def _seed_value(seed: int, row) -> dict:
    if row is None:
        return {"seed": seed, "status": "absent", "value": math.nan, "text": "–"}
    value = float(row.test) if not pd.isna(row.test) else math.nan
    if row.status == "ok" and not math.isnan(value):
        return {"seed": seed, "status": "ok", "value": value, "text": f"{value:.1f}"}
    return {"seed": seed, "status": row.status, "value": value, "text": row.status}


def _study_view(cells: pd.DataFrame, name: str, study: dict) -> dict:
    study_layout(study)  # fail early with the study's name in the message
    table = study_table(cells, name, study)
    everything = _all_study_cells(cells, study)
    tests = baseline_tests(cells, study)
    return {
        "name": name, "title": study.get("title", name), "baseline": study.get("baseline"),
        "table": _table_view(table), "blurb": _blurb_summary(table),
        "counts": status_counts(everything), "health": _recipe_health(everything, study),
        "gpu_hours": float(everything["gpu_hours"].sum()),
        "seed_sections": _seed_sections(study_cells(cells, study), study),
        "tests": tests.to_dict("records"),
    }


def _problems(cells: pd.DataFrame) -> list[dict]:
    bad = cells[cells["status"] != "ok"]
    columns = [*DIMS, "hparams", "seed", "status", "error"]
    return [{c: ("" if pd.isna(r[c]) else r[c]) for c in columns}
            for _, r in bad.sort_values(["status", *DIMS], na_position="last").iterrows()]


def _observed(cells: pd.DataFrame) -> list[tuple[str, str]]:
    """Provenance read off the cells themselves: when, where and with what code they ran."""
    def distinct(column: str) -> str:
        values = sorted({str(v) for v in cells[column].dropna()})
        return ", ".join(values) if values else "–"

    versions: dict[str, set[str]] = {}
    for text in cells["versions"].dropna():
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
    context = {
        "title": provenance.get("title", "blurbflow: BLURB benchmark report"),
        "counts": status_counts(cells),
        "total": len(cells),
        "gpu_hours": float(cells["gpu_hours"].sum()) if len(cells) else 0.0,
        "wall_hours": float(cells["wall_seconds"].sum()) / 3600 if len(cells) else 0.0,
        "studies": [_study_view(cells, name, study) for name, study in studies.items()],
        "problems": _problems(cells),
        "provenance": [(k, v) for k, v in flatten(provenance) if k != "title"],
        # what the caller's provenance already states is not repeated
        "observed": [(k, v) for k, v in (_observed(cells) if len(cells) else [])
                     if k not in provenance],
    }
    html = environment().get_template("report.html.j2").render(**context)
    write_text_atomic(Path(out_path), html)
