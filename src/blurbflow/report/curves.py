"""Per-epoch dev curves of every seed, one small panel per task × entry (model/recipe), as
coordinates for inline SVG: the instability Tinn et al. describe in words — seeds that never
leave chance, or fall back to it — made visible. A run is marked collapsed when its dev score
ends at or below the chance baseline on dev, or it diverged."""

from __future__ import annotations

import json
import math

import pandas as pd

from blurbflow.report.overview import entry_label

PANEL = {"width": 230, "height": 130, "left": 36, "right": 8, "top": 8, "bottom": 22}
KEYS = ["model", "task", "recipe", "hparams", "seed"]


def _dev_by_epoch(text) -> list[tuple[float, float]]:
    """(epoch, dev) per evaluation; evaluations every N steps (records with `step`) are placed
    at step / last step × the last record's epoch, so they share the epochs' axis."""
    if not isinstance(text, str) or not text:
        return []
    records = [
        r for r in json.loads(text) if r.get("dev") is not None and math.isfinite(float(r["dev"]))
    ]
    if records and all("step" in r for r in records):
        scale = int(records[-1]["epoch"]) / max(int(records[-1]["step"]), 1)
        return [(int(r["step"]) * scale, float(r["dev"])) for r in records]
    return [(int(r["epoch"]), float(r["dev"])) for r in records]


def _collapsed(row) -> bool:
    if row.status == "diverged" or pd.isna(row.dev):
        return True
    return not pd.isna(row.chance_dev) and float(row.dev) <= float(row.chance_dev)


def task_curves(cells: pd.DataFrame, selected: pd.DataFrame, study: dict) -> dict[str, dict]:
    """task → the panels of its entries, on one scale per task; the seeds are those of
    `selected` (the reported hyperparameters), the curves read off `cells`' `epochs` column."""
    if "epochs" not in cells.columns or selected.empty:
        return {}
    runs = selected[selected["seed"].notna() & selected["status"].isin(["ok", "diverged"])]
    runs = runs.merge(cells[[*KEYS, "epochs"]], on=KEYS, how="left")
    out = {}
    for task, at_task in runs.groupby("task", sort=False):
        lines = {}
        for row in at_task.itertuples(index=False):
            points = _dev_by_epoch(row.epochs)
            if points:
                key = (row.model, row.recipe)
                lines.setdefault(key, []).append((int(row.seed), points, _collapsed(row)))
        if lines:
            chance = at_task["chance_dev"].dropna()
            out[task] = _panels(study, lines, float(chance.mean()) if len(chance) else math.nan)
    return out


def _panels(study: dict, lines: dict, chance: float) -> dict:
    values = [v for runs in lines.values() for _, points, _ in runs for _, v in points]
    collapsed_any = any(c for runs in lines.values() for *_, c in runs)
    if collapsed_any and not math.isnan(chance):
        values.append(chance)  # collapsed runs are read against the chance line
    lo, hi = min(values), max(values)
    pad = max((hi - lo) * 0.05, 0.5)
    lo, hi = lo - pad, hi + pad
    last = max(e for runs in lines.values() for _, points, _ in runs for e, _ in points)
    left, right = PANEL["left"], PANEL["width"] - PANEL["right"]
    top, bottom = PANEL["top"], PANEL["height"] - PANEL["bottom"]

    def x(epoch: float) -> float:
        return round(left + (epoch - 1) / max(last - 1, 1) * (right - left), 1)

    def y(value: float) -> float:
        return round(bottom - (value - lo) / (hi - lo) * (bottom - top), 1)

    panels = []
    for model in study["models"]:
        for recipe in study["recipes"]:
            runs = sorted(lines.get((model, recipe), []))
            if not runs:
                continue
            drawn = [
                {
                    "seed": seed,
                    "collapsed": collapsed,
                    "points": [{"x": x(e), "y": y(v)} for e, v in points],
                    "path": " ".join(f"{x(e)},{y(v)}" for e, v in points),
                    "title": f"seed {seed}: dev "
                    + ", ".join(f"{v:.1f}" for _, v in points)
                    + (" (collapsed)" if collapsed else ""),
                }
                for seed, points, collapsed in runs
            ]
            bad = sum(line["collapsed"] for line in drawn)
            panels.append(
                {
                    "label": entry_label(study, model, recipe),
                    "lines": drawn,
                    "note": f"{bad} of {len(drawn)} collapsed" if bad else f"{len(drawn)} seeds",
                }
            )
    return {
        **PANEL,
        "x_right": right,
        "y_bottom": bottom,
        "panels": panels,
        "y_ticks": [{"y": y(v), "label": f"{v:.1f}"} for v in (lo + pad, hi - pad)],
        "x_ticks": [{"x": x(e), "label": str(e)} for e in sorted({1, last})],
        "chance_y": y(chance) if not math.isnan(chance) and lo <= chance <= hi else None,
    }
