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

from blurbflow.metrics.blurb import types_present
from blurbflow.record.schema import STATUSES
from blurbflow.report.comparisons import comparisons_view
from blurbflow.report.curves import task_curves
from blurbflow.report.heads import heads_line
from blurbflow.report.overview import blurb_overview
from blurbflow.report.reproduction import reproduction_view
from blurbflow.report.seeds import seed_sections
from blurbflow.results.choices import shown_study
from blurbflow.results.comparisons import study_comparisons
from blurbflow.results.formats import entry_text
from blurbflow.results.reproduction import reproduction_rows
from blurbflow.results.statistics import REGISTRY
from blurbflow.results.stats import (
    baseline_tests,
    compute_spent,
    failure_rates,
    fine_tuning_times,
)
from blurbflow.results.study_cells import DIMS, in_study, study_cells, study_columns
from blurbflow.results.tables import column_labels, study_layout, study_table, table_entries
from blurbflow.util.io import write_text_atomic
from blurbflow.util.provenance import cell_command

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
    statistic = table.attrs.get("statistic", "mean")
    other = REGISTRY[statistic].second  # shown small below each entry
    rows = []
    for row in table.index:
        cells = []
        for label in labels:
            cell = entries[(row, label)]
            cells.append(
                {
                    "text": entry_text(cell, statistic),
                    "other": other,
                    "median": _number(cell[other]),
                    "n": int(cell["n"]),
                    "best": bool(cell["best"]),
                    "blurb": label.startswith("BLURB"),
                }
            )
        rows.append({"label": row, "blurb": row in blurb_rows, "cells": cells})
    caption = f"{REGISTRY[statistic].words} over the seeds that finished ok, with the {other}"
    return {
        "corner": table.index.name or "",
        "columns": labels,
        "rows": rows,
        "best_rule": table.attrs.get("best_rule", ""),
        "caption": caption,
    }


def _overview_view(overview: pd.DataFrame, study: dict) -> dict | None:
    if overview.empty:
        return None
    corner = " / ".join(d for d in ("model", "recipe") if len(study[f"{d}s"]) > 1) or "model"
    blurb = overview.attrs["blurb"]
    columns = [c for c in overview.columns if c != "n"]
    finite = overview[blurb].dropna()
    top = finite.max() if len(finite) > 1 else None
    rows = [
        {
            "label": label,
            "scores": [_number(overview.loc[label, c]) for c in columns],
            "n": int(overview.loc[label, "n"]),
            "best": top is not None and overview.loc[label, blurb] == top,
        }
        for label in overview.index
    ]
    return {"columns": columns, "rows": rows, "blurb": blurb, "corner": corner}


def _records(frame: pd.DataFrame) -> list[dict]:
    return frame.to_dict("records") if len(frame) else []


def _study_view(cells: pd.DataFrame, name: str, study: dict) -> dict:
    study_layout(study)  # fail early with the study's name in the message
    study = shown_study(study)  # a `choose` group is the one recipe it shows
    light = cells[[c for c in study_columns(study) if c in cells.columns]]
    mask = in_study(light, study)
    everything = light[mask]
    selected = study_cells(everything, study)  # hyperparameters selected once per study
    broad = len(types_present(study["tasks"])) >= OVERVIEW_MIN_TYPES
    table = study_table(everything, name, study, selected)
    reproduction = reproduction_rows(everything, name, study, selected, table)
    return {
        "name": name,
        "title": study.get("title", name),
        "baseline": study.get("baseline"),
        "description": study.get("description", ""),
        "table": _table_view(table),
        "heads": heads_line(cells, study["models"], mask),
        "reproduction": reproduction_view(reproduction, study),
        "overview": _overview_view(blurb_overview(everything, study, selected), study)
        if broad
        else None,
        "counts": status_counts(everything),
        "compute": compute_spent(everything, study),
        "times": _records(fine_tuning_times(cells, study)),
        "failures": _records(failure_rates(everything, study, selected)),
        "seed_sections": seed_sections(selected, study, task_curves(cells, selected, study)),
        "tests": _records(baseline_tests(everything, study, selected)),
        "comparisons": comparisons_view(study_comparisons(everything, study, selected), study),
    }


def _debug_command(row: dict) -> str:
    """The command that re-runs a failed or diverged cell here (blurbflow.train.debug_cell),
    with the config files and `--config` its run recorded (`launch`)."""
    path = row.get("path")
    if not isinstance(path, str):
        return ""
    launch = json.loads(row["launch"]) if isinstance(row.get("launch"), str) else None
    return cell_command(os.path.normpath(os.path.dirname(path)), launch)


def _problems(cells: pd.DataFrame) -> dict:
    """Failed and diverged cells one by one (with their error), missing cells counted per
    (model, task, recipe) — a study not run yet would otherwise list thousands of rows."""
    columns = [*DIMS, "hparams", "seed", "status", "error"]
    bad = cells[cells["status"].isin(["failed", "diverged"])]
    bad = bad.sort_values(["status", *DIMS, "hparams", "seed"], na_position="last")
    listed = [
        {c: ("" if pd.isna(r[c]) else r[c]) for c in columns} | {"debug": _debug_command(r)}
        for r in bad.head(MAX_PROBLEM_ROWS).to_dict("records")
    ]
    missing = cells[cells["status"] == "missing"]
    groups = []
    if len(missing):
        keyed = missing.assign(**{d: missing[d].fillna("?") for d in DIMS})
        for (model, task, recipe), group in keyed.groupby(list(DIMS), sort=True):
            groups.append(
                {
                    "model": model,
                    "task": task,
                    "recipe": recipe,
                    "count": len(group),
                    "hparams": ", ".join(sorted({str(h) for h in group["hparams"].dropna()}))
                    or "–",
                }
            )
    return {
        "listed": listed,
        "unlisted": max(len(bad) - MAX_PROBLEM_ROWS, 0),
        "missing": groups,
        "missing_total": len(missing),
    }


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
        *(
            (f"cells' {package}", ", ".join(sorted(found)))
            for package, found in sorted(versions.items())
        ),
    ]


def render_report(
    cells: pd.DataFrame,
    studies: dict[str, dict],
    out_path: str | os.PathLike,
    provenance: dict,
    estimates: dict[str, float] | None = None,
) -> None:
    """Render the report for `studies` (name → study config) to one HTML file, atomically.
    `estimates`: study → device-hours the size table predicted before launch."""
    views = [_study_view(cells, name, study) for name, study in studies.items()]
    for view in views:
        view["compute"]["estimate_hours"] = (estimates or {}).get(view["name"])
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
        "observed": [
            (k, v) for k, v in (_observed(cells) if len(cells) else []) if k not in provenance
        ],
    }
    html = environment().get_template("report.html.j2").render(**context)
    write_text_atomic(Path(out_path), html)
