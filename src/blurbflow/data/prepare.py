"""The `prepare` step: parse a task's raw files and write `{train,dev,test}.parquet` plus
`stats.json` (counts per split) atomically. Parsing finishes before anything is written, so bad
input leaves no output behind."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd

from blurbflow.data.parsers import SPLITS, parse_task
from blurbflow.identity import data_checksums
from blurbflow.io import write_json_atomic, write_parquet_atomic
from blurbflow.tasks.registry import get_task


def _label_counts(values) -> dict[str, int]:
    return dict(sorted(Counter(values).items()))


def _ner(frame: pd.DataFrame) -> dict:
    return {"tokens": int(frame["tokens"].map(len).sum()),
            "entity_mentions": int(sum(tags.count("B") for tags in frame["tags"]))}


def _pico(frame: pd.DataFrame) -> dict:
    """Sentences are the instances; `pico_words` counts the words tagged I-PAR/I-INT/I-OUT."""
    counts = Counter(tag for tags in frame["tags"] for tag in tags)
    words = {tag: int(counts.get(tag, 0)) for tag in ("I-INT", "I-OUT", "I-PAR")}
    return {"tokens": int(frame["tokens"].map(len).sum()), "pico_words": words,
            "labelled_words": sum(words.values())}


def _doccls(frame: pd.DataFrame) -> dict:
    return {"sentences": int(frame["sentences"].map(len).sum()),
            "label_counts": _label_counts(label for labels in frame["labels"] for label in labels)}


# task type -> extra statistics of one split (besides `instances`)
SPLIT_STATS = {
    "ner": _ner,
    "pico": _pico,
    "re": lambda frame: {"label_counts": _label_counts(frame["label"])},
    "sts": lambda frame: {},
    "doccls": _doccls,
    "qa": lambda frame: {"label_counts": _label_counts(frame["label"])},
}


def task_stats(task: str, frames: dict[str, pd.DataFrame]) -> dict:
    spec = get_task(task)
    extra = SPLIT_STATS.get(spec.type, lambda frame: {})
    return {"task": task, "type": spec.type,
            "splits": {split: {"instances": len(frames[split]), **extra(frames[split])}
                       for split in SPLITS}}


def prepare_task(task: str, raw_root: Path, out_dir: Path) -> dict:
    """Parse `task` from `raw_root`, write its parquet splits and stats.json (counts and the
    splits' sha256); return the stats."""
    frames = parse_task(task, Path(raw_root))
    stats = task_stats(task, frames)
    out_dir = Path(out_dir)
    for split in SPLITS:
        write_parquet_atomic(out_dir / f"{split}.parquet", frames[split])
    # the checksums a cell's identity records (blurbflow.identity.data_checksums)
    stats["checksums"] = data_checksums(out_dir)
    write_json_atomic(out_dir / "stats.json", stats)
    return stats
