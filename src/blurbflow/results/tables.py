"""Per-study tables like the papers': test metric mean (std) and median (IQR) over seeds, best per
row marked by the study's `statistic` (mean, or median as Bio-LM reports; the statistics are
results/statistics.py's registry), BLURB score row (docs/results.md). `study_table` builds the
numbers (a frame with a (column, stat) header); results/formats.py writes them as CSV, Markdown
and LaTeX."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pandas as pd

from blurbflow.metrics.blurb import blurb_parts
from blurbflow.results.common_epoch import COMMON, entry_points, select_note, study_select
from blurbflow.results.layout import DIMS, shown_study, study_layout
from blurbflow.results.statistics import (
    REGISTRY,
    combine_tasks,
    get_statistic,
    statistic_names,
    summarise,
    table_statistics,
)
from blurbflow.results.study_cells import diverged_counts, ordered_tasks, seed_scores, study_cells
from blurbflow.config.study_plan import cross_validation

MARKS = ("diverged", "best")  # after the seed statistics in every table
FOLDS = "folds"  # a cross-validated study's extra stat: evaluation folds behind each seed's score
EPOCH = "epoch"  # a `select: common_epoch` study's extra stat: the epoch every seed reports at
STATISTICS = statistic_names()  # a study's `statistic`: the entry value, bold and BLURB
BLURB_KEY = "BLURB"  # comparison group of BLURB entries when marking the best


def compared_dimension(study: dict) -> str | None:
    """What the best mark compares: the recipes (for the same model and task) when the study
    has several, else the models (for the same task); None when each task has one entry."""
    if len(study["recipes"]) > 1:
        return "recipe"
    if len(study["models"]) > 1:
        return "model"
    return None


def study_statistic(study: dict) -> str:
    """The study's `statistic` (default mean)."""
    statistic = study.get("statistic", "mean")
    get_statistic(statistic)  # ValueError naming the choices
    return statistic


def best_rule(study: dict) -> str:
    """The best mark in words, for captions."""
    statistic = study_statistic(study)
    return {
        "recipe": f"best {statistic} among the recipes, for the same model and task",
        "model": f"best {statistic} among the models, for the same task",
        None: "no mark (one entry per task)",
    }[compared_dimension(study)]


def seed_summary(values: Sequence[float]) -> dict:
    """Every registered statistic of the per-seed scores (mean, sample std, median, IQR, n, …;
    results/statistics.py)."""
    return summarise(values)


def table_stats(study: dict) -> tuple[str, ...]:
    """The stats of each table column: the study's seed statistics (`table_statistics`), the
    marks, and `folds` in a cross-validated study."""
    stats = (*table_statistics(study_statistic(study)), *MARKS)
    stats = (*stats, FOLDS) if cross_validation(study) else stats
    return (*stats, EPOCH) if study_select(study) == COMMON else stats


def fold_counts(selected: pd.DataFrame) -> dict[tuple, int]:
    """(model, task, recipe) → the fewest evaluation folds behind one of its ok seeds' scores
    (cross-validated tasks only)."""
    if FOLDS not in selected.columns:
        return {}
    ok = selected[(selected["status"] == "ok") & selected[FOLDS].notna()]
    return {key: int(v) for key, v in ok.groupby(list(DIMS), sort=False)[FOLDS].min().items()}


def fold_note(study: dict) -> str:
    """The cross-validated tasks' entries in words, for captions ('' without)."""
    cv = cross_validation(study)
    if not cv:
        return ""
    return (
        f"{', '.join(cv['tasks'])}: per seed the {cv['statistic']} test score over the folds "
        f"but the tune fold {cv['tune_fold']} (hyperparameters and epochs chosen on its dev); "
        "`folds`: how many"
    )


def _label(values: Sequence[str]) -> str:
    return " / ".join(values) if values else "test"


def _mark_best(entries: list[dict], compared: str | None, statistic: str = "mean") -> None:
    """Best = highest `statistic` among the entries that differ only in the `compared` dimension
    (the same task, or both BLURB; and the same model when recipes are compared)."""
    if compared is None:
        return
    groups: dict[tuple, list[dict]] = {}
    for entry in entries:
        if math.isnan(entry[statistic]):
            continue
        key = tuple(entry.get(d) for d in DIMS if d != compared)
        groups.setdefault(key, []).append(entry)
    for group in groups.values():
        if len(group) < 2:
            continue
        top = max(e[statistic] for e in group)
        for entry in group:
            entry["best"] = entry[statistic] == top


def _blurb_entry(parts: list[dict]) -> dict:
    """One BLURB entry from the per-task entries it summarises (BLURB of means and of medians;
    no std or IQR: seeds are not paired across tasks; n: the weakest support)."""
    entry = {
        **combine_tasks(parts),
        "diverged": sum(p["diverged"] for p in parts),
        "task": BLURB_KEY,
    }
    for dim in ("model", "recipe"):  # the dimension its parts share, for the best mark
        values = {p[dim] for p in parts}
        entry[dim] = values.pop() if len(values) == 1 else None
    return entry


def study_table(
    cells: pd.DataFrame, name: str, study: dict, selected: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The study's table: index = row labels, columns = (column label, stat) with stats
    mean, std, median, iqr, n (seeds ok; `table_stats`), diverged and best (see
    `compared_dimension`; by the study's `statistic`). `selected`: the study's cells already
    through `study_cells`, when the caller has them."""
    study = shown_study(study)
    rows_dim, column_dims = study_layout(study)
    order = {dim: list(study[f"{dim}s"]) for dim in DIMS}
    order["task"] = ordered_tasks(order["task"])
    selected = study_cells(cells, study) if selected is None else selected
    scores, diverged = seed_scores(selected), diverged_counts(selected)
    stats, folds = table_stats(study), fold_counts(selected)
    points = entry_points(selected)

    column_keys = list(itertools.product(*(order[d] for d in column_dims)))
    entries = []
    for row in order[rows_dim]:
        for column in column_keys:
            key = {rows_dim: row, **dict(zip(column_dims, column, strict=True))}
            key.update({d: order[d][0] for d in DIMS if d not in key})
            summary = seed_summary(scores.get(tuple(key[d] for d in DIMS), []))
            summary["diverged"] = diverged.get(tuple(key[d] for d in DIMS), 0)
            summary[FOLDS] = folds.get(tuple(key[d] for d in DIMS), 0)
            summary[EPOCH] = points.get(tuple(key[d] for d in DIMS), (0, None))[0]
            entries.append({**key, **summary, "row": row, "column": _label(column)})
    entries += _blurb_entries(entries, rows_dim, column_dims, order)
    _mark_best(entries, compared_dimension(study), study_statistic(study))

    row_labels = list(dict.fromkeys(e["row"] for e in entries))
    column_labels = list(dict.fromkeys(e["column"] for e in entries))
    empty = {**{n: s.empty for n, s in REGISTRY.items()}, "diverged": 0, "best": False}
    empty.update({FOLDS: 0, EPOCH: 0})
    data = {(c, stat): [empty[stat]] * len(row_labels) for c in column_labels for stat in stats}
    position = {row: i for i, row in enumerate(row_labels)}
    for entry in entries:
        for stat in stats:
            data[(entry["column"], stat)][position[entry["row"]]] = entry.get(stat, False)
    table = pd.DataFrame(
        data,
        index=pd.Index(row_labels, name=rows_dim),
        columns=pd.MultiIndex.from_product([column_labels, stats], names=["column", "stat"]),
    )
    table = _typed(table, column_labels)
    table.attrs.update(
        {
            "chosen": chosen_recipes(selected, rows_dim, column_dims),
            "study": name,
            "title": study.get("title", name),
            "rows": rows_dim,
            "columns": column_dims,
            "blurb_rows": [r for r in row_labels if r.startswith(BLURB_KEY)],
            "best_rule": best_rule(study),
            "statistic": study_statistic(study),
            "folds": fold_note(study),
            "select": select_note(study),
        }
    )
    return table


def chosen_recipes(selected: pd.DataFrame, rows_dim: str, column_dims: list[str]) -> dict:
    """(row, column label) → the recipe a `choose` group picked there ('' when none)."""
    if "chosen" not in selected.columns:
        return {}
    picked = selected.dropna(subset=["chosen"]).drop_duplicates(list(DIMS))
    return {
        (row[rows_dim], _label([row[d] for d in column_dims])): row["chosen"]
        for row in picked.to_dict("records")
    }


def _blurb_entries(entries, rows_dim, column_dims, order) -> list[dict]:
    """A BLURB row (tasks as rows) or BLURB columns (tasks among the columns)."""
    tasks = order["task"]
    if len(tasks) < 2 or (rows_dim != "task" and "task" not in column_dims):
        return []
    blurb = []
    for label, members in blurb_parts(tasks):  # BLURB's 13, and all types when there are more
        mine = [e for e in entries if e["task"] in members]
        if rows_dim == "task":
            for column in dict.fromkeys(e["column"] for e in entries):
                parts = [e for e in mine if e["column"] == column]
                blurb.append({**_blurb_entry(parts), "row": label, "column": column})
            continue
        others = [d for d in column_dims if d != "task"]
        for row in order[rows_dim]:
            for other in itertools.product(*(order[d] for d in others)):
                parts = [
                    e
                    for e in mine
                    if e["row"] == row
                    and all(e[d] == v for d, v in zip(others, other, strict=True))
                ]
                column = _label([label, *other])
                blurb.append({**_blurb_entry(parts), "row": row, "column": column})
    return blurb


def _typed(table: pd.DataFrame, column_labels: list[str]) -> pd.DataFrame:
    for label in column_labels:
        for stat, statistic in REGISTRY.items():
            if (label, stat) in table.columns:
                table[(label, stat)] = table[(label, stat)].astype(statistic.dtype)
        table[(label, "diverged")] = table[(label, "diverged")].astype("int64")
        table[(label, "best")] = table[(label, "best")].astype("bool")
        for extra in (FOLDS, EPOCH):
            if (label, extra) in table.columns:
                table[(label, extra)] = table[(label, extra)].astype("int64")
    return table


def column_labels(table: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(table.columns.get_level_values("column")))


def table_entries(table: pd.DataFrame) -> dict[tuple[str, str], dict]:
    """(row, column label) → {stat: value, and `chosen`: the recipe a `choose` group picked
    or ''}, read in one pass (`.loc` per entry is slow)."""
    columns = {column: table[column].tolist() for column in table.columns}
    chosen = table.attrs.get("chosen") or {}
    stats = list(dict.fromkeys(table.columns.get_level_values("stat")))
    return {
        (row, label): {
            **{stat: columns[(label, stat)][i] for stat in stats},
            "chosen": chosen.get((row, label), ""),
        }
        for i, row in enumerate(table.index)
        for label in column_labels(table)
    }
