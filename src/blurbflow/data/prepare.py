"""The `prepare` step: parse a task's raw files and write `{train,dev,test}.parquet` plus
`stats.json` (counts per split) atomically. Parsing finishes before anything is written, so bad
input leaves no output behind."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from blurbflow.data.parsers import SPLITS, parse_task
from blurbflow.stage_versions import prepare_versions
from blurbflow.tasks.custom import local_files
from blurbflow.tasks.registry import get_task
from blurbflow.util.artefacts import RECORD, write_record
from blurbflow.util.digests import data_checksums, file_sha256
from blurbflow.util.io import write_json_atomic, write_parquet_atomic


def task_stats(task: str, frames: dict[str, pd.DataFrame]) -> dict:
    """Instances per split plus the type's own counts (entity mentions, label counts …)."""
    spec = get_task(task)
    return {
        "task": task,
        "type": spec.type,
        "splits": {
            split: {"instances": len(frames[split]), **spec.kind.stats(frames[split])}
            for split in SPLITS
        },
    }


def prepare_task(task: str, raw_root: Path, out_dir: Path) -> dict:
    """Parse `task` from `raw_root`, write its parquet splits and stats.json (counts and the
    splits' sha256; a user task's source files and their sha256 too); return the stats."""
    spec = get_task(task)
    # the files' record goes first: Snakemake removes a failed job's declared outputs, not it
    (Path(out_dir) / RECORD).unlink(missing_ok=True)
    frames = parse_task(task, Path(raw_root))
    stats = task_stats(task, frames)
    if not spec.builtin:  # the user's files, as provenance: editing one re-runs its cells
        stats["definition"] = spec.data
        stats["source_files"] = {path: file_sha256(Path(path)) for path in local_files(spec)}
    out_dir = Path(out_dir)
    for split in SPLITS:
        write_parquet_atomic(out_dir / f"{split}.parquet", frames[split])
    # the checksums a cell's identity records (blurbflow.util.digests.data_checksums)
    stats["checksums"] = data_checksums(out_dir)
    stats["versions"] = prepare_versions(spec)  # the code that wrote it (blurbflow.stage_versions)
    write_json_atomic(out_dir / "stats.json", stats)
    # what readers verify before use (blurbflow.util.artefacts)
    write_record(out_dir, "data", [*(f"{split}.parquet" for split in SPLITS), "stats.json"])
    return stats
