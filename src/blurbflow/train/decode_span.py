"""Extractive-QA batches and decoding: windows in, one prediction per instance out.

A training batch carries `labels` = (start, end) token positions per window (the span head's
loss; `batching.label_weights` then weighs micro-batches by their windows). Prediction runs
every window of a split, then decodes each instance from all of its windows at once
(`blurbflow.qa.nbest_spans`): {"text": the answer ("" = none, SQuAD 2.0 only), "score", "nbest":
[[text, probability], …]}, the form the span metrics take (blurbflow.metrics.span).
"""

from __future__ import annotations

import numpy as np
import torch

from blurbflow.qa.decode import nbest_spans
from blurbflow.qa.settings import span_settings
from blurbflow.train import batching, compiled
from blurbflow.train.device import autocast, to_device
from blurbflow.train.encode_span import OUTSIDE


def span_batch(data: dict, rows: list[int], pad_id: int) -> dict[str, torch.Tensor]:
    width = max(len(data["input_ids"][i]) for i in rows)

    def pad(name: str, value: int) -> torch.Tensor:
        out = torch.full((len(rows), width), value, dtype=torch.long)
        for r, i in enumerate(rows):
            values = data[name][i]
            out[r, : len(values)] = torch.tensor(values, dtype=torch.long)
        return out

    lengths = torch.tensor([len(data["input_ids"][i]) for i in rows])
    batch = {
        "input_ids": pad("input_ids", pad_id),
        "attention_mask": (torch.arange(width)[None, :] < lengths[:, None]).long(),
    }
    if "token_type_ids" in data:
        batch["token_type_ids"] = pad("token_type_ids", 0)
    batch["labels"] = torch.tensor(
        [[data["start_positions"][i], data["end_positions"][i]] for i in rows], dtype=torch.long
    )
    return batch


def _offsets(data: dict, w: int) -> list[tuple[int, int] | None]:
    return [
        None if start == OUTSIDE else (start, end)
        for start, end in zip(data["offset_start"][w], data["offset_end"][w], strict=True)
    ]


def decode_examples(spec, window_logits: dict[int, np.ndarray], data: dict) -> list[dict]:
    """One prediction per instance (in `data["example"]` order) from each window's
    (tokens, 2) start/end logits (`window_logits`: window row -> logits)."""
    settings = span_settings(spec.options, 10**6)  # decoding keys only: no window size here
    by_example: dict[int, list[int]] = {}
    for w in sorted(window_logits):
        by_example.setdefault(int(data["example"][w]), []).append(w)
    predictions = []
    for _, rows in sorted(by_example.items()):
        nbest, null_score = nbest_spans(
            data["context"][rows[0]],
            [(window_logits[w][:, 0], window_logits[w][:, 1]) for w in rows],
            [_offsets(data, w) for w in rows],
            n_best=int(settings["n_best"]),
            max_answer_length=int(settings["max_answer_length"]),
        )
        best = nbest[0] if nbest else None
        text = best["text"] if best else ""
        if settings["version"] == "2.0" and (
            best is None or null_score - best["score"] > float(settings["null_threshold"])
        ):
            text = ""
        predictions.append(
            {
                "text": text,
                "score": best["score"] if best else None,
                "nbest": [[c["text"], round(c["probability"], 6)] for c in nbest],
            }
        )
    return predictions


def decode_windows(spec, logits, data: dict, rows: list[int], scheme: str = "BIO") -> list:
    """The DECODERS entry: a batch's (windows, tokens, 2) logits -> the predictions of the
    instances whose windows are in `rows` (complete instances only: `predict_span` decodes
    after every window is scored)."""
    values = logits.float().cpu().numpy()
    return decode_examples(
        spec, {w: values[r, : len(data["input_ids"][w])] for r, w in enumerate(rows)}, data
    )


def predict_span(
    model, spec, data: dict, batch_size: int, pad_id: int, device, precision, shapes=None
):
    """The prediction of every instance of an encoded split, in the prepared frame's order;
    `shapes` (blurbflow.train.shapes.Shapes): the cell's bucket widths and CUDA graphs."""
    model.eval()
    scored: dict[int, np.ndarray] = {}
    with torch.inference_mode():
        for rows in batching.eval_batches(data["length"], batch_size):
            batch = span_batch(data, rows, pad_id)
            batch.pop("labels")
            if shapes is not None:
                batch = shapes.bucketed(batch)
                if shapes.graphs:  # each batch's logits reach the host before the next
                    compiled.step_begins()
            with autocast(device, precision):
                logits = model(**to_device(batch, device)).logits.float().cpu().numpy()
            for r, w in enumerate(rows):
                scored[w] = logits[r, : len(data["input_ids"][w])]
    return decode_examples(spec, scored, data)
