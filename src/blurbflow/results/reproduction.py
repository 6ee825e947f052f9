"""A study's numbers beside the paper's (docs/results.md "Reproduction"): per table entry the
published value (results/published_values.py: the papers' transcribed tables and the config's
`published:` block), ours (the study's `statistic` over the ok seeds at the selected
hyperparameters: the number its table shows), the seeds behind it, our 95% interval, the
difference and the verdict against the entry's margin (results/verdict.py).

The interval, over the per-seed test scores of the entry (`seed_scores`):

- `statistic: mean`: the t-interval of the mean, mean ± t(0.975, n − 1) · s / √n (s the sample
  standard deviation), level 0.95.
- `statistic: median`: the distribution-free order-statistic interval of the median
  [x(k), x(n + 1 − k)] (sorted scores), with the largest k whose coverage
  1 − 2 · P(Binomial(n, ½) ≤ k − 1) is at least 0.95 — exact for any continuous distribution,
  no bootstrap. With 5 seeds or fewer no k reaches 0.95; the interval is then the range
  [min, max] and `level` its smaller exact coverage (5 seeds 0.9375, 3 seeds 0.75, 2 seeds 0.5).

Fewer than 2 ok seeds give no interval. A BLURB entry of a mean study gets one from its
tasks' seeds (results/verdict.py); a median study's BLURB entry has none and is not comparable.
Per entry with a published value and a number of ours, `verdict` (results/verdict.py):
`reproduced` (our interval within ± the entry's `margin` of the published value, give or take
half a unit of its last printed digit: the printed number stands for every value that rounds to
it), `differs` (the interval excludes it by more than the margin) or `inconclusive` (neither,
or no interval), with `seeds_to_decide` for an inconclusive one and `note` saying why an entry
with a published value has no interval or verdict, or that the paper's own task values
contradict its printed BLURB score.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from blurbflow.util.io import write_text_atomic
from blurbflow.metrics.blurb import blurb_parts
from blurbflow.published import column_key
from blurbflow.record.verify import metric_range
from blurbflow.results.layout import DIMS, shown_study, study_layout
from blurbflow.results.published_values import BLURB, study_published
from blurbflow.results.study_cells import ordered_tasks, seed_scores, study_cells
from blurbflow.results.tables import study_statistic, study_table, table_entries
from blurbflow.results.verdict import (
    VERDICTS,
    blurb_interval,
    contradiction,
    seeds_to_decide,
    study_margin,
    verdict,
)
from blurbflow.tasks.registry import get_task

LEVEL = 0.95
SUFFIX = ".reproduction.csv"  # results/tables/{study}.reproduction.csv
COLUMNS = [
    "row",  # the study table's row label (its CSV's index)
    "column",  # the study table's column label
    "task",  # the entry's task; `blurb` for a BLURB score
    "published",  # the paper's value; empty: not printed, or no published values
    "ours",  # the study's statistic over ok seeds: the table's number
    "n",  # ok seeds behind it (a BLURB entry: the fewest of its tasks)
    "low",  # our interval (empty: fewer than 2 seeds, or a BLURB entry)
    "high",
    "level",  # the interval's coverage: 0.95, or less for a median over ≤ 5 seeds
    "delta",  # ours − published
    "margin",  # the entry's reproduction_margin (results/verdict.py)
    "verdict",  # reproduced, differs or inconclusive; empty when not comparable
    "seeds_to_decide",  # inconclusive: the seeds that would decide it at the observed spread
    "note",  # why an entry with a published value has no interval or verdict
]


def mean_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float] | None:
    """The t-interval of the mean; None with fewer than 2 values."""
    from scipy.stats import t  # here: scipy takes seconds to import (see results/stats.py)

    n = len(values)
    if n < 2:
        return None
    series = pd.Series(list(values), dtype="float64")
    half = float(t.ppf((1 + level) / 2, n - 1)) * float(series.std(ddof=1)) / math.sqrt(n)
    return float(series.mean()) - half, float(series.mean()) + half


def _below(n: int, k: int) -> float:
    """P(Binomial(n, ½) ≤ k)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def median_interval(
    values: Sequence[float], level: float = LEVEL
) -> tuple[float, float, float] | None:
    """The order-statistic interval of the median and its exact coverage (module doc); None with
    fewer than 2 values."""
    n = len(values)
    if n < 2:
        return None
    ordered = sorted(float(v) for v in values)
    k = 1
    while k + 1 <= n // 2 and 1 - 2 * _below(n, k) >= level:  # k + 1 still reaches the level
        k += 1
    return ordered[k - 1], ordered[n - k], 1 - 2 * _below(n, k - 1)


def interval(values: Sequence[float], statistic: str) -> tuple[float, float, float] | None:
    """(low, high, level) of the study's statistic over the seeds (module doc)."""
    if statistic == "median":
        return median_interval(values)
    if statistic != "mean":
        return None  # no interval for another registered statistic (results/statistics.py)
    found = mean_interval(values)
    return None if found is None else (*found, LEVEL)


def _label(values: Sequence[str]) -> str:
    """A table column label (as results/tables.py writes it)."""
    return " / ".join(values) if values else "test"


def _entries(study: dict) -> list[tuple[str, str, tuple[str, str, str], tuple, list | None]]:
    """(table row label, table column label, (row key, column key, task), (model, task,
    recipe), the BLURB score's tasks or None) of every entry the study's table shows, in its
    order (as `study_table` lays them out; a BLURB entry's task is `blurb`)."""
    rows_dim, column_dims = study_layout(study)
    order = {dim: list(study[f"{dim}s"]) for dim in DIMS}
    order["task"] = ordered_tasks(order["task"])

    def product(dims):
        return list(itertools.product(*(order[d] for d in dims)))

    found = []
    for row in order[rows_dim]:
        for column in product(column_dims):
            at = {rows_dim: row, **dict(zip(column_dims, column, strict=True))}
            at.update({d: order[d][0] for d in DIMS if d not in at})
            key = (row, column_key(column), at["task"])
            found.append((row, _label(column), key, tuple(at[d] for d in DIMS), None))
    tasks = order["task"]
    label, parts = blurb_parts(tasks)[0]
    if len(tasks) > 1 and rows_dim == "task":
        for column in product(column_dims):
            key = (BLURB, column_key(column), BLURB)
            at = {**dict(zip(column_dims, column, strict=True)), "task": BLURB}
            at.update({d: order[d][0] for d in DIMS if d not in at})
            found.append((label, _label(column), key, tuple(at[d] for d in DIMS), parts))
    elif len(tasks) > 1 and "task" in column_dims:
        others = [d for d in column_dims if d != "task"]
        for row in order[rows_dim]:
            for other in product(others):
                at = {**dict(zip(others, other, strict=True)), "task": BLURB}
                key = (row, column_key([at[d] for d in column_dims]), BLURB)
                at.update({rows_dim: row})
                at.update({d: order[d][0] for d in DIMS if d not in at})
                dims = tuple(at[d] for d in DIMS)
                found.append((row, _label([label, *other]), key, dims, parts))
    return found


def _number(value) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _row(study, statistic, value, ours, seeds, parts, unit) -> dict:
    """An entry's interval, delta, margin, verdict, seeds to decide and note (module doc)."""
    task = BLURB if parts else next(iter(seeds))
    low = high = level = note = decided = seeds_needed = None
    if parts and statistic == "mean":
        found = blurb_interval(seeds, ours) if ours is not None else None
    elif parts:
        found = None
        note = f"a {statistic}'s BLURB score has no interval" if value is not None else None
    else:
        found = interval(seeds[task], statistic)
    if found:
        low, high, level = found
        # a t-interval may reach past the metrics' range (F1 > 100)
        ranges = [metric_range(get_task(t).metric) for t in seeds]
        low = max(low, min(bottom for bottom, _ in ranges))
        high = min(high, max(top for _, top in ranges))
    margin = study_margin(study, task)
    if value is not None and ours is None:
        note = "no ok seed"
    elif value is not None and note is None:
        if found:
            decided = verdict(value, low, high, margin, unit)
        elif statistic in ("mean", "median"):
            decided = "inconclusive"
            note = "fewer than 2 ok seeds" + (" in a task" if parts else "") + ": no interval"
        else:
            note = f"no interval for the {statistic}"
        if decided == "inconclusive" and statistic == "mean":
            seeds_needed = seeds_to_decide(seeds, ours - value, margin, unit)
    return {
        "low": low,
        "high": high,
        "level": level,
        # rounded: the float noise of 92.0 − 92.1 is no difference
        "delta": round(ours - value, 10) if value is not None and ours is not None else None,
        "margin": margin,
        "verdict": decided,
        "seeds_to_decide": seeds_needed,
        "note": note,
    }


def reproduction_rows(
    cells: pd.DataFrame,
    name: str,
    study: dict,
    selected: pd.DataFrame | None = None,
    table: pd.DataFrame | None = None,
    published: dict | None = None,
) -> pd.DataFrame:
    """One row per entry of the study's table, in its order, with COLUMNS (module doc).
    `selected` (the study's `study_cells`), `table` (its `study_table`) and `published`
    (`study_published`) when the caller has them. attrs: `source`, `decimals`, `statistic`."""
    study = shown_study(study)
    selected = study_cells(cells, study) if selected is None else selected
    table = study_table(cells, name, study, selected) if table is None else table
    published = study_published(name, study) if published is None else published
    statistic = study_statistic(study)
    scores, shown = seed_scores(selected), table_entries(table)
    unit = 0.5 * 10 ** -(published["decimals"] or 0)
    rows, entries = [], _entries(study)
    keys = {dims: key for _, _, key, dims, parts in entries if not parts}
    for row_label, column_label, key, dims, parts in entries:
        entry = shown[(row_label, column_label)]
        ours = _number(entry[statistic]) if int(entry["n"]) else None
        value = published["values"].get(key)
        seeds = {t: scores.get((dims[0], t, dims[2]), []) for t in parts or [dims[1]]}
        row = _row(study, statistic, value, ours, seeds, parts, unit)
        if parts and value is not None:  # the paper's own numbers may contradict it
            printed = {t: published["values"].get(keys[(dims[0], t, dims[2])]) for t in parts}
            flag = contradiction(printed, value, unit)
            row["note"] = "; ".join(n for n in (row["note"], flag) if n) or None
        rows.append(
            {"row": row_label, "column": column_label, "task": key[2], "published": value}
            | {"ours": ours, "n": int(entry["n"])}
            | row
        )
    frame = pd.DataFrame(rows, columns=COLUMNS).astype({"seeds_to_decide": "Int64"})
    frame.attrs.update(
        {
            "source": published["source"],
            "decimals": published["decimals"],
            "statistic": statistic,
        }
    )
    return frame


def reproduction_summary(frame: pd.DataFrame) -> dict[str, int]:
    """Counts: entries, with a published value, per verdict, not comparable (a published value
    but no verdict: no number of ours, or no interval for the statistic), not printed (no
    published value)."""
    has = frame["published"].notna()
    verdicts = frame["verdict"]
    return {
        "entries": len(frame),
        "published": int(has.sum()),
        **{name: int((verdicts == name).sum()) for name in VERDICTS},
        "not_comparable": int((has & verdicts.isna()).sum()),
        "not_printed": int((~has).sum()),
    }


def to_csv(frame: pd.DataFrame) -> str:
    """The rows as CSV: empty fields for missing values, whole numbers of seeds."""
    return frame.to_csv(index=False)


def write_reproduction(frame: pd.DataFrame, stem: str | os.PathLike) -> Path:
    """Write `{stem}.reproduction.csv` (beside the study's `{stem}.csv`) atomically."""
    path = Path(stem)
    path = path.with_name(f"{path.name}{SUFFIX}")
    write_text_atomic(path, to_csv(frame))
    return path
