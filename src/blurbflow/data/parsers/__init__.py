"""Raw-file parsers: `parse_task(task, raw_root)` reads `raw_root/{source}/...` for the task's
sources and returns train/dev/test frames in the uniform schema (DESIGN §4, `COLUMNS`).

A new task is one registry entry plus one parser registered in `PARSERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from blurbflow.data.parsers import bioasq, biosses, conll, ddi, ebmpico, gad, hoc, pubmedqa
from blurbflow.data.parsers import chemprot as chemprot_parser
from blurbflow.data.parsers.common import COLUMNS, SPLITS
from blurbflow.tasks.registry import TaskSpec, get_task

Parser = Callable[[TaskSpec, Path], dict[str, pd.DataFrame]]

PARSERS: dict[str, Parser] = {
    **{name: conll.parse for name in ("bc5chem", "bc5disease", "ncbidisease", "bc2gm", "jnlpba")},
    "gad": gad.parse,
    "biosses": biosses.parse,
    "hoc": hoc.parse,
    "pubmedqa": pubmedqa.parse,
    "chemprot": chemprot_parser.parse,
    "ddi": ddi.parse,
    "ebmpico": ebmpico.parse,
    "bioasq": bioasq.parse,
}

__all__ = ["COLUMNS", "PARSERS", "SPLITS", "parse_task"]


def parse_task(task: str, raw_root: Path) -> dict[str, pd.DataFrame]:
    """{"train", "dev", "test"} -> frame for `task`, read from `raw_root/{source}/`."""
    spec = get_task(task)
    try:
        parser = PARSERS[task]
    except KeyError:
        raise NotImplementedError(f"no parser for task {task!r} yet; parsers exist for "
                                  f"{', '.join(sorted(PARSERS))}") from None
    frames = parser(spec, Path(raw_root))
    expected = list(COLUMNS[spec.type])
    for split in SPLITS:  # guard the contract every later step relies on
        if list(frames[split].columns) != expected:
            raise RuntimeError(f"parser for {task} returned columns {list(frames[split].columns)} "
                               f"for {split}, expected {expected}")
    return frames
