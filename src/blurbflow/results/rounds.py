"""The rounds of a study with adaptive seeds (issue 22; docs/seeds.md "In the workflow"): after
round k every open comparison of the study (results/comparisons.py: each recipe against the
baseline, each pair of models) is decided at look k (results/sequential.py) on the first n_k test
scores of its two cells; the cells of comparisons that continue get `step` more seeds. A
comparison's first final decision is its result. The round file `results/adaptive/{study}/
round{k}.json` records the seeds each (model, task, recipe) has (`seeds`) and will have next
(`next`), every decision so far and whether the study is `done`."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd

from blurbflow.util import paths
from blurbflow.util.io import write_text_atomic
from blurbflow.results.aggregate import aggregate
from blurbflow.results.comparisons import comparison_pairs
from blurbflow.results.layout import DIMS
from blurbflow.results.sequential import Outcome, SeedPlan, decide
from blurbflow.results.study_cells import study_cells
from blurbflow.config.study_plan import adaptive_spec, runs_on


def cell_id(model: str, task: str, recipe: str) -> str:
    return f"{model}/{task}/{recipe}"


def first_seeds(study: dict) -> dict[str, int]:
    """Round 1: every adaptive (model, task, recipe) of the study at its plan's `start`."""
    counts = {}
    for task in study["tasks"]:
        spec = adaptive_spec(study, task)
        if spec is None:
            continue
        for model in study["models"]:
            for recipe in study["recipes"]:
                if runs_on(study, recipe, model, task):
                    counts[cell_id(model, task, recipe)] = spec["start"]
    return counts


def _scores(selected: pd.DataFrame) -> dict[str, tuple[list[float], float | None]]:
    """cell id → (test scores in seed order, NaN for a diverged seed; the task's chance)."""
    done = selected[selected["status"].isin(["ok", "diverged"])].sort_values("seed")
    found = {}
    for key, group in done.groupby(list(DIMS), sort=False):
        scores = group["test"].where(group["status"] == "ok").astype("float64")
        chance = pd.to_numeric(group["chance_test"], errors="coerce").dropna()
        found[cell_id(*key)] = (list(scores), float(chance.iloc[0]) if len(chance) else None)
    return found


def _json_ready(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, tuple | list):
        return [_json_ready(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    return value


def decide_round(
    config: dict, name: str, round_: int, previous: dict | None, root: str | os.PathLike = "."
) -> dict:
    """Round `round_` of study `name` (after `previous`, the round before's record)."""
    study = config["studies"][name]
    counts = dict(previous["next"]) if previous else first_seeds(study)
    earlier = [c for c in (previous or {}).get("comparisons", []) if c["outcome"] != "continue"]
    closed = {c["id"] for c in earlier}
    adaptive = {tuple(key.split("/")): n for key, n in counts.items()}
    frame = aggregate(config, root, drop=False, adaptive=adaptive, studies=[name])
    scores = _scores(study_cells(frame, study))
    comparisons, grow = list(earlier), set()
    for task in study["tasks"]:
        spec = adaptive_spec(study, task)
        if spec is None:
            continue
        plan = SeedPlan.from_config(spec)
        for (model, recipe), (ref_model, ref_recipe), kind in comparison_pairs(study):
            a, b = cell_id(model, task, recipe), cell_id(ref_model, task, ref_recipe)
            key = f"{a} vs {b}"
            if key in closed or a not in counts or b not in counts:
                continue  # decided earlier, or a side the study does not run (recipe_scope)
            n = plan.seeds[min(round_, plan.looks) - 1]
            (a_scores, chance), (b_scores, _) = (scores.get(c, ([], None)) for c in (a, b))
            if len(a_scores) < n or len(b_scores) < n:
                short = a if len(a_scores) < n else b
                raise ValueError(f"{short}: fewer than {n} finished seeds in round {round_}")
            decision = decide(a_scores[:n], b_scores[:n], round_, plan, chance)
            comparisons.append({"id": key, "task": task, "kind": kind, **decision.to_dict()})
            if decision.outcome is Outcome.CONTINUE:
                grow.update({a: plan.seeds[round_], b: plan.seeds[round_]}.items())
    following = {**counts, **dict(grow)}
    return _json_ready(
        {
            "study": name,
            "round": round_,
            "seeds": counts,
            "next": following,
            "done": not grow,
            "comparisons": comparisons,
        }
    )


def write_round(record: dict, out: str | os.PathLike) -> None:
    write_text_atomic(Path(out), json.dumps(record, indent=1, sort_keys=True) + "\n")


def read_round(path: str | os.PathLike) -> dict:
    return json.loads(Path(path).read_text())


def final_seeds(paths) -> dict[tuple[str, str, str], int]:
    """(model, task, recipe) → its seeds, from each adaptive study's last round file."""
    counts = {}
    for path in paths:
        record = read_round(path)
        counts.update({tuple(k.split("/")): n for k, n in record["seeds"].items()})
    return counts


def planned_seeds(config: dict, root: str | os.PathLike = ".") -> dict[tuple[str, str, str], int]:
    """(model, task, recipe) → the seeds the latest round on disk asks for (`next`): what a
    failed run's report lists (the `onerror` handler has no checkpoint to ask)."""
    counts = {}
    for name in config.get("studies", {}):
        k, record = 1, None
        while (path := Path(root, paths.ADAPTIVE_ROUND.format(study=name, round=k))).exists():
            record, k = read_round(path), k + 1
        if record is not None:
            counts.update({tuple(key.split("/")): n for key, n in record["next"].items()})
    return counts
