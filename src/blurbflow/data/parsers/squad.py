"""SQuAD v1.1 / v2.0 (Rajpurkar et al.), the extractive-QA format every span task is read into.

Raw layout (`resources/raw/{source}/`, the files as https://rajpurkar.github.io/SQuAD-explorer/
serves them): `train-v1.1.json` + `dev-v1.1.json`, or `train-v2.0.json` + `dev-v2.0.json`
(the task's `options["version"]`, default "2.0"). SQuAD has no public test set: the official dev
file is the test split, and the train articles whose title hashes into the last
`options["dev_share"]` (default 5%) form dev, so that no article is in two splits.

Every span task (SQuAD, BioASQ factoid) prepares to `SPAN_COLUMNS`: one row per (question,
context) instance; `question_id` groups the instances of one question (BioASQ: one per
snippet) and `gold_answers` holds what scoring compares against (all SQuAD answers; BioASQ's
synonyms).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError
from blurbflow.qa.squad import read_squad
from blurbflow.tasks.types import SPAN_COLUMNS

FILES = {"1.1": ("train-v1.1.json", "dev-v1.1.json"), "2.0": ("train-v2.0.json", "dev-v2.0.json")}
DEV_SHARE = 0.05


def span_frame(split: str, rows: list[dict]) -> pd.DataFrame:
    """A split's frame in `SPAN_COLUMNS` order; `rows` hold every column but `split`."""
    frame = pd.DataFrame([{**row, "split": split} for row in rows], columns=list(SPAN_COLUMNS))
    if not rows:
        frame["id"] = frame["id"].astype(str)
    return frame


def in_dev(key: str, share: float) -> bool:
    """Whether `key` (an article title, a question id) falls into the held-out dev share:
    a stable hash, so the split never depends on file order or the Python hash seed."""
    digest = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16)
    return digest / 0x1_0000_0000 < share


def squad_row(example: dict) -> dict:
    """A question of `read_squad` as a prepared row: its own group, all answers gold."""
    return {
        "id": example["id"],
        "question": example["question"],
        "context": example["context"],
        "answer_texts": example["answer_texts"],
        "answer_starts": example["answer_starts"],
        "is_impossible": example["is_impossible"],
        "question_id": example["id"],
        "gold_answers": example["answer_texts"],
    }


def parse(spec, raw_root: Path) -> dict[str, pd.DataFrame]:
    (source,) = spec.sources
    version = str(spec.options.get("version", "2.0"))
    if version not in FILES:
        raise ValueError(f"task {spec.name}: SQuAD version {version!r}; use 1.1 or 2.0")
    share = float(spec.options.get("dev_share", DEV_SHARE))
    train_name, dev_name = FILES[version]
    folder = Path(raw_root) / source
    train = read_squad(folder / train_name, source)
    test = read_squad(folder / dev_name, source)
    if version == "1.1" and any(e["is_impossible"] for e in train + test):
        raise DataFormatError.at(
            folder / train_name,
            None,
            "SQuAD v1.1 files have no unanswerable questions, but this one has",
            "set the task's version option to 2.0 for SQuAD 2.0 files",
        )
    held_out = [e for e in train if in_dev(e["title"], share)]
    kept = [e for e in train if not in_dev(e["title"], share)]
    return {
        "train": span_frame("train", [squad_row(e) for e in kept]),
        "dev": span_frame("dev", [squad_row(e) for e in held_out]),
        "test": span_frame("test", [squad_row(e) for e in test]),
    }
