"""The statistics over a table entry's seeds, one registry entry each (docs/extending.md "A
table statistic"): its function over the ok seeds' test scores, dtype, value over too few seeds,
the spread shown beside it, and whether it feeds the BLURB score (then a study may choose it as
its `statistic:`). The tables (csv/md/tex), `results/{study}.json`, the report and the config
schema's `statistic` enum all iterate over `REGISTRY`; adding a statistic is one entry here.

Where one appears: every entry in `results/{study}.json` (each task, and in each BLURB block
when it feeds BLURB); `shown` ones in every table; the others only in the tables (csv columns,
md/tex entries, report) of a study that chooses it, so no existing table changes."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas only where scores are summarised: the Snakefile reads the names
    import pandas as pd


@dataclass(frozen=True)
class Statistic:
    name: str
    function: Callable[[pd.Series], float | int]  # over the ok seeds' scores (≥ min_seeds)
    dtype: str  # of its table column: float64 or int64
    empty: float | int  # its value over fewer than min_seeds seeds
    min_seeds: int
    spread: str | None  # the statistic in parentheses after it in a table entry ('mean (std)')
    blurb: bool  # its BLURB entry is the BLURB score of the tasks' values; a study may choose it
    combine: Callable[[dict[str, float]], float | int] | None  # task → value to a BLURB entry
    shown: bool  # a column of every table, else only of the tables of studies that choose it
    second: str  # listed below the entries (md/tex second grid, report) of a study choosing it
    words: str  # the entry in words, for captions: 'median (IQR: 75th minus 25th percentile)'
    first_line: bool  # md/tex start with '{words} over seeds; bold: …' (mean tables never did)


REGISTRY: dict[str, Statistic] = {}


def _blurb_score(*args, **kwargs):
    # imported when a BLURB entry is combined: blurbflow.metrics pulls in numpy, and the
    # Snakefile imports this module for the names alone (tests/test_snakefile_imports.py)
    from blurbflow.metrics.blurb import blurb_score

    return blurb_score(*args, **kwargs)


def register_statistic(
    name: str,
    *,
    dtype: str = "float64",
    empty: float | int = math.nan,
    min_seeds: int = 1,
    spread: str | None = None,
    blurb: bool = False,
    combine: Callable[[dict[str, float]], float | int] | None = None,
    shown: bool = False,
    second: str = "mean",
    words: str | None = None,
    first_line: bool = True,
):
    """Register the decorated function (pd.Series of seed scores → value) as statistic `name`."""

    def decorate(function):
        if name in REGISTRY:
            raise ValueError(f"statistic {name!r} is registered twice")
        REGISTRY[name] = Statistic(
            name=name,
            function=function,
            dtype=dtype,
            empty=empty,
            min_seeds=min_seeds,
            spread=spread,
            blurb=blurb,
            combine=_blurb_score if blurb and combine is None else combine,
            shown=shown,
            second=second,
            words=words or name,
            first_line=first_line,
        )
        return function

    return decorate


# The registry's order is the column order of the tables and of results/{study}.json.
@register_statistic(
    "mean",
    spread="std",
    blurb=True,
    shown=True,
    second="median",
    words="mean (std)",
    first_line=False,
)
def _mean(scores: pd.Series) -> float:
    return scores.mean()


@register_statistic("std", min_seeds=2, shown=True)  # sample std (ddof=1)
def _std(scores: pd.Series) -> float:
    return scores.std(ddof=1)


@register_statistic(
    "median",
    spread="iqr",
    blurb=True,
    shown=True,
    words="median (IQR: 75th minus 25th percentile)",
)
def _median(scores: pd.Series) -> float:
    return scores.median()


@register_statistic("iqr", min_seeds=2, shown=True)  # 75th − 25th percentile, linear
def _iqr(scores: pd.Series) -> float:
    return scores.quantile(0.75) - scores.quantile(0.25)


# the count of ok seeds; a BLURB entry has the weakest support among its tasks
@register_statistic(
    "n", dtype="int64", empty=0, min_seeds=0, shown=True, combine=lambda v: min(v.values())
)
def _count(scores: pd.Series) -> int:
    return len(scores)


# the worst seed: how low a recipe can go (a study may choose it; in its tables only then)
@register_statistic("min", blurb=True, words="min (the lowest seed)")
def _min(scores: pd.Series) -> float:
    return scores.min()


def statistic_names() -> tuple[str, ...]:
    """What a study's `statistic:` may be: the statistics that feed the BLURB score."""
    return tuple(name for name, s in REGISTRY.items() if s.blurb)


def get_statistic(name: str) -> Statistic:
    """A study's statistic by name; ValueError naming the choices."""
    if name not in statistic_names():
        raise ValueError(f"study statistic {name!r} is not one of {', '.join(statistic_names())}")
    return REGISTRY[name]


def summarise(values: Sequence[float]) -> dict:
    """Every registered statistic over the per-seed scores, in the registry's order."""
    import pandas as pd

    series = pd.Series(list(values), dtype="float64")
    return {
        name: s.function(series) if len(series) >= s.min_seeds else s.empty
        for name, s in REGISTRY.items()
    }


def combine_tasks(parts: list[dict]) -> dict:
    """A BLURB entry's statistics from its tasks' entries (`task` and every statistic); empty
    where the statistic has no BLURB form (std, IQR: seeds are not paired across tasks)."""
    return {
        name: s.combine({p["task"]: p[name] for p in parts}) if s.combine else s.empty
        for name, s in REGISTRY.items()
    }


def table_statistics(statistic: str) -> tuple[str, ...]:
    """The statistics a table of a study with `statistic` holds: the shown ones, and the
    chosen one with its spread and second, in the registry's order."""
    chosen = get_statistic(statistic)
    wanted = {statistic, chosen.second, *([chosen.spread] if chosen.spread else [])}
    return tuple(name for name, s in REGISTRY.items() if s.shown or name in wanted)


def with_statistics(schema: dict) -> dict:
    """The config schema with `$defs/statistic`'s enum (a study's `statistic:`) filled from the
    registry: the schema file keeps no list, so a new statistic needs no schema edit."""
    schema = copy.deepcopy(schema)
    schema["$defs"]["statistic"]["enum"] = list(statistic_names())
    return schema
