"""The report's per-seed view of a study: per task, every (model, recipe) entry with each seed's
test score or status, and an SVG strip plot of the scores (instability is the subject, so no
seed is hidden; seeds whose dev score ended at or below chance are marked collapsed)."""

from __future__ import annotations

import math

import pandas as pd

from blurbflow.report.overview import entry_label
from blurbflow.results.common_epoch import entry_points, point_text
from blurbflow.results.study_cells import ordered_tasks, seeds_of

STRIP = {"width": 760, "label_width": 320, "row_height": 20, "top": 8, "axis": 22}


def strip_plot(entries: list[dict], chance: float) -> dict | None:
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
        rows.append(
            {
                "label": entry["label"],
                "y": y,
                "points": [
                    {
                        "x": x(s["value"]),
                        "collapsed": s["collapsed"],
                        "title": f"seed {s['seed']}: {s['value']:.2f}"
                        + (" (dev at or below chance)" if s["collapsed"] else ""),
                    }
                    for s in ok
                ],
                "mean_x": None if math.isnan(mean) else x(mean),
                "note": f"{bad} without score" if bad else "",
            }
        )
    axis_y = STRIP["top"] + len(entries) * STRIP["row_height"]
    ticks = [{"x": x(v), "label": f"{v:.1f}"} for v in (lo + pad, (lo + hi) / 2, hi - pad)]
    return {
        "width": STRIP["width"],
        "height": axis_y + STRIP["axis"],
        "axis_y": axis_y,
        "left": left,
        "right": right,
        "rows": rows,
        "ticks": ticks,
        "chance_x": x(chance) if not math.isnan(chance) and lo <= chance <= hi else None,
    }


def seed_sections(selected: pd.DataFrame, study: dict, curves: dict) -> list[dict]:
    """Per task: every (model, recipe) entry with every seed's test value or status, and the
    per-epoch dev curves of `curves` (report.curves.task_curves)."""
    by_entry: dict[tuple, dict[int, object]] = {}
    for row in selected.itertuples(index=False):
        if not pd.isna(row.seed):
            by_entry.setdefault((row.model, row.task, row.recipe), {})[int(row.seed)] = row
    points = entry_points(selected)  # `select: common_epoch`: the epoch every seed reports at
    sections = []
    for task in ordered_tasks(study["tasks"]):
        at_task = selected[selected["task"] == task]
        observed = {int(s) for s in at_task["seed"].dropna()}
        expected = seeds_of(study, task) or sorted(observed)
        seeds = [s for s in expected if s in observed] or expected
        entries = []
        for model in study["models"]:
            for recipe in study["recipes"]:
                here = by_entry.get((model, task, recipe), {})
                hparams = sorted({str(r.hparams) for r in here.values() if r.hparams})
                if (model, task, recipe) in points:
                    hparams.append(point_text(points[(model, task, recipe)]))
                entries.append(
                    {
                        "label": entry_label(study, model, recipe),
                        "hparams": ", ".join(hparams) or "–",
                        "seeds": [seed_value(seed, here.get(seed)) for seed in seeds],
                    }
                )
        chance = at_task["chance_test"].dropna()
        chance_value = float(chance.mean()) if len(chance) else math.nan
        sections.append(
            {
                "task": task,
                "seeds": seeds,
                "entries": entries,
                "chance": chance_value,
                "plot": strip_plot(entries, chance_value),
                "curves": curves.get(task),
            }
        )
    return sections


def seed_value(seed: int, row) -> dict:
    if row is None:
        return {
            "seed": seed,
            "status": "absent",
            "value": math.nan,
            "text": "–",
            "collapsed": False,
        }
    value = float(row.test) if not pd.isna(row.test) else math.nan
    if row.status == "ok" and not math.isnan(value):
        collapsed = pd.isna(row.dev) or (
            not pd.isna(row.chance_dev) and float(row.dev) <= float(row.chance_dev)
        )
        return {
            "seed": seed,
            "status": "ok",
            "value": value,
            "text": f"{value:.1f}",
            "collapsed": bool(collapsed),
        }
    return {
        "seed": seed,
        "status": row.status,
        "value": value,
        "text": row.status,
        "collapsed": False,
    }
