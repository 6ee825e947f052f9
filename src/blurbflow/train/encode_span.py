"""Extractive-QA inputs (the `windows` encoder of `blurbflow.train.encode`): each instance becomes
one or more overlapping windows (`blurbflow.qa.make_windows`), one encoded row each.

A row keeps what decoding needs: `example` (the row of the prepared frame it comes from; its
`id` is that instance's id), `offset_start`/`offset_end` (each token's character span in the
context, -1 outside the context part) and the `context` itself; training targets are
`start_positions`/`end_positions` (both 0, the [CLS] token, where the window holds no answer).
"""

from __future__ import annotations

import pandas as pd

from blurbflow.qa.settings import span_settings
from blurbflow.qa.windows import make_windows

OUTSIDE = -1  # offset of a token outside the context part (question, specials)


def _examples(frame: pd.DataFrame) -> list[dict]:
    return [
        {
            "id": str(row.id),
            "question": str(row.question),
            "context": str(row.context),
            "answer_texts": [str(t) for t in row.answer_texts],
            "answer_starts": [int(s) for s in row.answer_starts],
            "is_impossible": bool(row.is_impossible),
        }
        for row in frame.itertuples(index=False)
    ]


def window_settings(spec, max_length: int) -> dict:
    """What shapes the windows of `spec` at `max_length` (recorded in meta.json)."""
    settings = span_settings(spec.options, max_length)
    return {k: settings[k] for k in ("doc_stride", "max_question_length")}


def encode_windows(frame, spec, tokenizer, max_length, columns, counts) -> dict:
    """Fill `columns` with the windows' bookkeeping; returns their input ids (and token types)."""
    examples = _examples(frame)
    shape = window_settings(spec, max_length)
    try:
        windows = make_windows(tokenizer, examples, max_length, **shape)
    except ValueError as error:
        raise ValueError(
            f"task {spec.name}: {error} (the task's options doc_stride / max_question_length, "
            f"at max_length {max_length})"
        ) from None
    columns["id"] = [examples[i]["id"] for i in windows.example_index]
    columns["example"] = list(windows.example_index)
    columns["context"] = [examples[i]["context"] for i in windows.example_index]
    columns["offset_start"] = [[OUTSIDE if o is None else o[0] for o in w] for w in windows.offsets]
    columns["offset_end"] = [[OUTSIDE if o is None else o[1] for o in w] for w in windows.offsets]
    columns["start_positions"] = list(windows.start_positions)
    columns["end_positions"] = list(windows.end_positions)
    found = {i for i, s in zip(windows.example_index, windows.start_positions, strict=True) if s}
    answerable = [i for i, e in enumerate(examples) if e["answer_texts"] and not e["is_impossible"]]
    counts["examples"] = len(examples)
    counts["answers_outside_windows"] = sum(i not in found for i in answerable)
    encoded = {"input_ids": windows.input_ids}
    if windows.token_type_ids is not None:
        encoded["token_type_ids"] = windows.token_type_ids
    return encoded
