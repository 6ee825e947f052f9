"""Prediction and decoding: a model's logits turned into predictions shaped like the gold of the
task's metric (word-level tags, labels, scores, label sets, answer spans: train/decode_span.py)."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from blurbflow.config.identity import file_sha256
from blurbflow.models import padding_free
from blurbflow.tasks import TaskSpec
from blurbflow.train import batching, compiled, tagging
from blurbflow.train.decode_span import decode_windows, predict_span, span_batch
from blurbflow.train.device import autocast
from blurbflow.train.encode import IGNORE
from blurbflow.train.shapes import Shapes
from blurbflow.util.io import write_parquet_atomic

# TaskType.target -> gold of a prepared frame, in the form the task's metric takes
GOLD = {
    "tags": lambda frame: [list(tags) for tags in frame["tags"]],
    "score": lambda frame: frame["score"].astype(float).tolist(),
    "labels": lambda frame: [list(labels) for labels in frame["labels"]],
    "label": lambda frame: frame["label"].astype(str).tolist(),
    "span": lambda frame: [
        {"question_id": str(q), "answers": [str(a) for a in answers]}
        for q, answers in zip(frame["question_id"], frame["gold_answers"], strict=True)
    ],
}


def gold_labels(spec: TaskSpec, frame: pd.DataFrame) -> list:
    """Gold in the form the task's metric takes (word-level tags, labels, scores, label sets)."""
    return GOLD[spec.kind.target](frame)


def label_dtype(spec: TaskSpec) -> torch.dtype:
    """The dtype of the training targets: float for regression and multi-label, else class ids."""
    return torch.float32 if spec.kind.float_labels else torch.long


def _decode_tags(spec: TaskSpec, logits, data: dict, rows: list[int], scheme: str) -> list:
    """Word tags predicted in the `tagging` scheme, decoded back to the prepared format."""
    labels = tagging.scheme_labels(spec.type, spec.labels, scheme)
    best = logits.argmax(-1)
    out = []
    for r, i in enumerate(rows):
        mask = torch.tensor(data["labels"][i]) != IGNORE
        tags = [labels[k] for k in best[r, : len(mask)][mask].tolist()]
        tags += ["O"] * (data["n_words"][i] - len(tags))  # words cut by truncation
        out.append(tagging.to_gold_format(tags, scheme, spec.type))
    return out


# TaskType.target -> decoder of a batch's logits into predictions shaped like `gold_labels`
DECODERS = {
    "tags": _decode_tags,
    "score": lambda spec, logits, data, rows, scheme: logits.squeeze(-1).tolist(),
    "labels": lambda spec, logits, data, rows, scheme: [
        [spec.labels[k] for k in np.flatnonzero(row)] for row in (logits > 0).tolist()
    ],
    "label": lambda spec, logits, data, rows, scheme: [
        spec.labels[k] for k in logits.argmax(-1).tolist()
    ],
    "span": decode_windows,  # one prediction per instance, from all of its windows
}


def decode(spec: TaskSpec, logits, data: dict, rows: list[int], scheme: str = "BIO") -> list:
    """Turn a batch's logits into predictions shaped like `gold_labels`."""
    return DECODERS[spec.kind.target](spec, logits, data, rows, scheme)


@dataclass(frozen=True)
class BatchFormat:
    """How a cell's instances become model inputs, and its logits predictions."""

    pad_id: int
    targets: torch.dtype = torch.long  # the label dtype (label_dtype)
    scheme: str = "BIO"  # the tagging scheme the model predicts in
    entities: bool = False  # whether batches carry the RE entity positions (re_pooling)


def make_batch(data: dict, rows: list[int], fmt: BatchFormat) -> dict:
    """The padded batch; with `fmt.entities`, the RE entity positions that `re_pooling` reads."""
    if "start_positions" in data:  # extractive-QA windows
        return span_batch(data, rows, fmt.pad_id)
    batch = batching.collate(data, rows, fmt.pad_id, fmt.targets)
    if fmt.entities:
        batch["entity_spans"] = torch.tensor(
            [[data["e1_span"][i], data["e2_span"][i]] for i in rows], dtype=torch.long
        )
        batch["entity_starts"] = torch.tensor(
            [[data["e1_pos"][i], data["e2_pos"][i]] for i in rows], dtype=torch.long
        )
    return batch


def predict(
    model,
    spec: TaskSpec,
    data: dict,
    batch_size: int,
    fmt: BatchFormat,
    device=None,
    precision: str | None = None,
    shapes=None,
) -> list:
    """The decoded prediction of every instance of `data`, in its order (extractive QA: of
    every prepared instance, each decoded from all of its windows). `shapes`: how a batch
    becomes inputs on the device (blurbflow.train.shapes.Shapes; None: as it is). The logits
    stay on the device until every batch has run (one wait, not one per batch)."""
    device = device or torch.device("cpu")
    shapes = shapes or Shapes(device, fmt.pad_id)
    if spec.kind.target == "span":
        return predict_span(model, spec, data, batch_size, fmt.pad_id, device, precision, shapes)
    model.eval()
    batches, computed = batching.eval_batches(data["length"], batch_size), []
    with torch.inference_mode():
        for rows in batches:
            batch = make_batch(data, rows, fmt)
            batch.pop("labels")
            inputs, packed = shapes.inputs(batch)
            if shapes.graphs:  # the last batch's logits are copied out of the graphs' memory
                compiled.step_begins()
            with padding_free.running(model, packed) if packed else contextlib.nullcontext():
                with autocast(device, precision):
                    logits = model(**inputs).logits
            # float32 as a copy where a graph replay would overwrite the output
            computed.append(logits.to(torch.float32, copy=shapes.graphs))
    predictions: list = [None] * len(data["input_ids"])
    for rows, logits in zip(batches, computed, strict=True):
        decoded = decode(spec, logits.cpu(), data, rows, fmt.scheme)
        for i, value in zip(rows, decoded, strict=True):
            predictions[i] = value
    return predictions


def write_predictions(splits, predictions: dict | None, cell_dir: Path) -> str:
    """predictions.parquet: one row per instance of each scored split (gold and prediction as
    JSON); returns its sha256. `splits`: the cell's blurbflow.train.inputs.Splits."""
    rows = [
        {"id": i, "split": split, "gold": json.dumps(g), "pred": json.dumps(p)}
        for split, values in (predictions or {}).items()
        for i, g, p in zip(
            splits.frame(split)["id"].astype(str).tolist(), splits.gold(split), values, strict=True
        )
    ]
    path = Path(cell_dir) / "predictions.parquet"
    write_parquet_atomic(path, pd.DataFrame(rows, columns=["id", "split", "gold", "pred"]))
    return file_sha256(path)
