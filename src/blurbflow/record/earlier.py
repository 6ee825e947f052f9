"""A seed's earlier result, kept aside while it retrains: when a seed that verified before must
retrain because its identity changed (a rebuilt model, re-prepared data), its files move to
`seed{N}/earlier/` first. A retrain that finishes replaces them (the folder is removed); one that
fails or is killed leaves them beside the failure: not counted, but listed with the failed row
(aggregation), and restored by the next run when the identity comes back as it was, so fixing
the cause does not retrain that seed's history.

Every move is one rename per file, so an interrupted move leaves each file in exactly one of the
two folders; `restore` moves all of them back."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

EARLIER = "earlier"
# result.json last: a set kept aside is one whose result.json is in `earlier/`. Not the
# train_log.jsonl: a preempted retrain appends to its own when it resumes.
FILES = ("predictions.parquet", "weights.pt", "result.json")


def earlier_dir(seed_dir: str | os.PathLike) -> Path:
    return Path(seed_dir) / EARLIER


def keep_aside(seed_dir: str | os.PathLike) -> list[str]:
    """Move the seed's result files into `earlier/` (replacing what was there); their names."""
    aside = earlier_dir(seed_dir)
    if aside.exists():
        shutil.rmtree(aside)
    aside.mkdir()
    moved = []
    for name in FILES:
        if Path(seed_dir, name).is_file():
            os.replace(Path(seed_dir, name), aside / name)
            moved.append(name)
    return moved


def restore(seed_dir: str | os.PathLike) -> bool:
    """Move every file of `earlier/` back over the seed's (a failure's result.json included);
    whether there was one."""
    aside = earlier_dir(seed_dir)
    if not aside.is_dir():
        return False
    names = sorted(p.name for p in aside.iterdir() if p.is_file())
    for name in sorted(names, key=lambda n: n == "result.json"):  # result.json last
        os.replace(aside / name, Path(seed_dir, name))
    shutil.rmtree(aside, ignore_errors=True)
    return bool(names)


def discard(seed_dir: str | os.PathLike) -> None:
    """The retrain finished: its result replaces the earlier one."""
    shutil.rmtree(earlier_dir(seed_dir), ignore_errors=True)


def describe(seed_dir: str | os.PathLike) -> str | None:
    """One line for the report about a kept-aside result; None when there is none."""
    path = earlier_dir(seed_dir) / "result.json"
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(result, dict):
        return None
    test = result.get("test")
    shown = f", test {test:.4g}" if isinstance(test, int | float) else ""
    return (
        f"earlier result kept aside, not counted: {path} ({result.get('status')}{shown}, "
        f"finished {result.get('finished')}); restored when its identity comes back"
    )
