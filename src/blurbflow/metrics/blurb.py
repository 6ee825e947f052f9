"""The BLURB score: macro average over task types, so the five NER datasets weigh as much as the
single STS dataset (docs/metrics.md)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from blurbflow.tasks.builtin import ENTRIES
from blurbflow.tasks.registry import TASK_TYPES, get_task

# Every task type in table order: BLURB's six in the papers' order (ner, pico, re, sts, doccls,
# qa), then the types beyond BLURB (users' own tasks).
BLURB_TYPES: tuple[str, ...] = TASK_TYPES
BLURB_TASKS: tuple[str, ...] = tuple(spec.name for spec in ENTRIES)  # the benchmark's 13


def types_present(tasks: Iterable[str]) -> list[str]:
    """The task types of `tasks`, in table order."""
    present = {get_task(task).type for task in tasks}
    return [t for t in BLURB_TYPES if t in present]


def blurb_score(scores: Mapping[str, float]) -> float:
    """Mean over the task types present of the mean of that type's task scores.

    `scores` is keyed by task name. A NaN task score (a task without results) makes the BLURB
    score NaN rather than silently averaging over fewer tasks.
    """
    by_type: dict[str, list[float]] = {}
    for task, score in scores.items():
        by_type.setdefault(get_task(task).type, []).append(float(score))
    if not by_type:
        return math.nan
    type_means = [sum(values) / len(values) for values in by_type.values()]
    return sum(type_means) / len(type_means)


def blurb_label(tasks: Iterable[str]) -> str:
    """'BLURB' for exactly BLURB's 13 tasks; any other set's macro average over task types is
    not BLURB's number, and says so: e.g. 'BLURB-style average (ner, re)'."""
    tasks = list(tasks)
    if set(tasks) == set(BLURB_TASKS):
        return "BLURB"
    return f"BLURB-style average ({', '.join(types_present(tasks))})"


def blurb_parts(tasks: Iterable[str]) -> list[tuple[str, list[str]]]:
    """The aggregates a table of `tasks` shows, each (label, its tasks): the BLURB score when
    BLURB's 13 are all there, and the average over every task type when there are more."""
    tasks = list(tasks)
    if set(BLURB_TASKS) < set(tasks):
        return [("BLURB", [t for t in tasks if t in BLURB_TASKS]), (blurb_label(tasks), tasks)]
    return [(blurb_label(tasks), tasks)]
