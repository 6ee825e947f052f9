"""Tokenize a prepared task once per (tokenizer, task, input length) into parquet that every cell
with that key reuses. Word-level tasks label the first sub-token of each word; the rest get -100."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from blurbflow.tasks import TaskSpec

IGNORE = -100
SPLITS = ("train", "dev", "test")


def _encode_frame(frame: pd.DataFrame, spec: TaskSpec, tokenizer, max_length: int) -> dict:
    label_index = {label: i for i, label in enumerate(spec.labels)}
    columns: dict[str, list] = {"id": frame["id"].astype(str).tolist()}
    if spec.type in ("ner", "pico"):
        enc = tokenizer(
            [list(t) for t in frame["tokens"]],
            is_split_into_words=True,
            truncation=True,
            max_length=max_length,
        )
        labels = []
        for row, tags in enumerate(frame["tags"]):
            previous, row_labels = None, []
            for word in enc.word_ids(row):
                first = word is not None and word != previous
                row_labels.append(label_index[tags[word]] if first else IGNORE)
                previous = word
            labels.append(row_labels)
        columns["labels"] = labels
        columns["n_words"] = [len(t) for t in frame["tokens"]]
    else:
        if spec.type == "sts":
            enc = tokenizer(
                list(frame["text_a"]), list(frame["text_b"]), truncation=True, max_length=max_length
            )
            columns["label"] = frame["score"].astype(float).tolist()
        elif spec.type == "qa":
            enc = tokenizer(
                list(frame["question"]),
                list(frame["context"]),
                truncation="only_second",
                max_length=max_length,
            )
            columns["label"] = [label_index[x] for x in frame["label"]]
        elif spec.type == "doccls":
            enc = tokenizer(list(frame["text"]), truncation=True, max_length=max_length)
            columns["label"] = [
                [1.0 if label in set(labels) else 0.0 for label in spec.labels]
                for labels in frame["labels"]
            ]
        else:  # re
            enc = tokenizer(list(frame["text"]), truncation=True, max_length=max_length)
            columns["label"] = [label_index[str(x)] for x in frame["label"]]
    columns["input_ids"] = enc["input_ids"]
    if "token_type_ids" in enc:
        columns["token_type_ids"] = enc["token_type_ids"]
    columns["length"] = [len(ids) for ids in enc["input_ids"]]
    return columns


def encode_task(spec: TaskSpec, data_dir: Path, tokenizer, max_length: int, out_dir: Path) -> dict:
    """Write {train,dev,test}.parquet + meta.json to out_dir (built in a temp dir, then renamed)."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        meta = {
            "task": spec.name,
            "max_length": max_length,
            "tokenizer": tokenizer.name_or_path,
            "splits": {},
        }
        for split in SPLITS:
            frame = pd.read_parquet(Path(data_dir) / f"{split}.parquet")
            columns = _encode_frame(frame, spec, tokenizer, max_length)
            pq.write_table(pa.table(columns), tmp / f"{split}.parquet")
            lengths = columns["length"]
            meta["splits"][split] = {
                "instances": len(lengths),
                "tokens": int(sum(lengths)),
                "truncated": int(sum(n >= max_length for n in lengths)),
            }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return meta


def load_encoded(out_dir: Path, split: str) -> dict[str, list]:
    return pq.read_table(Path(out_dir) / f"{split}.parquet").to_pydict()
