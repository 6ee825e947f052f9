"""Raw-file parsers: `parse_task(task, raw_root)` reads `raw_root/{source}/...` for the task's
sources (a user task: its own files) and returns train/dev/test frames in its type's columns.

A task entry names its parser (`TaskSpec.parser`, a key of `PARSERS`); a new format is one
module here plus its key.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from blurbflow.data.parsers import (
    bioasq,
    bioasq_factoid,
    biosses,
    conll,
    ddi,
    ebmpico,
    gad,
    hoc,
    local,
    pubmedqa,
    squad,
)
from blurbflow.data.parsers import chemprot as chemprot_parser
from blurbflow.data.parsers.common import COLUMNS, SPLITS
from blurbflow.tasks.registry import TaskSpec, get_task

Parser = Callable[[TaskSpec, Path], dict[str, pd.DataFrame]]

PARSERS: dict[str, Parser] = {
    "conll": conll.parse,
    "gad": gad.parse,
    "biosses": biosses.parse,
    "hoc": hoc.parse,
    "pubmedqa": pubmedqa.parse,
    "chemprot": chemprot_parser.parse,
    "ddi": ddi.parse,
    "ebmpico": ebmpico.parse,
    "bioasq": bioasq.parse,
    "squad": squad.parse,  # SQuAD v1.1 / v2.0 (options["version"])
    "bioasq-factoid": bioasq_factoid.parse,
    "local": local.parse,  # users' own files (docs/data.md "Your own tasks")
    "hub": local.parse,  # users' Hugging Face datasets
}

__all__ = ["COLUMNS", "PARSERS", "SPLITS", "parse_task"]


def parse_task(task: str, raw_root: Path) -> dict[str, pd.DataFrame]:
    """{"train", "dev", "test"} -> frame for `task`, read from `raw_root/{source}/`."""
    spec = get_task(task)
    try:
        parser = PARSERS[spec.parser]
    except KeyError:
        raise NotImplementedError(
            f"task {task!r}: no parser {spec.parser!r}; parsers exist for "
            f"{', '.join(sorted(PARSERS))}"
        ) from None
    frames = parser(spec, Path(raw_root))
    expected = list(spec.kind.columns)
    for split in SPLITS:  # guard the contract every later step relies on
        if list(frames[split].columns) != expected:
            raise RuntimeError(
                f"parser for {task} returned columns {list(frames[split].columns)} "
                f"for {split}, expected {expected}"
            )
    return frames
