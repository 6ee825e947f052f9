"""Users' own tasks (docs/data.md "Your own tasks"): local CoNLL, TSV (with a header line),
JSON Lines or SQuAD JSON (extractive QA) files, or a Hugging Face dataset at a pinned revision,
read into the task type's prepared columns. `columns` maps a prepared column to the name it has
in the files (default: the same name)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError
from blurbflow.data.parsers.common import SPLITS, iter_lines, make_frame, tab_fields
from blurbflow.data.parsers.conll import read_conll
from blurbflow.data.parsers.squad import read_squad, span_frame, squad_row
from blurbflow.tasks.builtin import NER_LABELS
from blurbflow.tasks.spec import TaskSpec

FIX = "fix the file (docs/data.md 'Your own tasks' shows each format)"
# Prepared columns a file may leave out, and what they become.
OPTIONAL = {
    "original_text": None, "e1_start": None, "e1_end": None, "e2_start": None, "e2_end": None,
    "e1_type": None, "e2_type": None, "sentences": None, "sentence_labels": None,
}  # fmt: skip


def _conll(spec: TaskSpec, path: Path) -> Iterator[tuple[int | None, dict]]:
    if tuple(spec.labels) == NER_LABELS:  # untyped B/I/O, as BLURB's NER corpora
        for tokens, tags in read_conll(path, spec.name):
            yield None, {"tokens": tokens, "tags": tags}
        return
    tokens: list[str] = []
    tags: list[str] = []
    for number, line in iter_lines(path, spec.name):
        if not line.strip():
            if tokens:
                yield number, {"tokens": tokens, "tags": tags}
            tokens, tags = [], []
            continue
        token, tag = tab_fields(path, number, line, ("token", "tag"), FIX)
        tokens.append(token)
        tags.append(tag.strip())
    if tokens:
        yield None, {"tokens": tokens, "tags": tags}


def _tsv(spec: TaskSpec, path: Path) -> Iterator[tuple[int | None, dict]]:
    header = None
    for number, line in iter_lines(path, spec.name):
        fields = line.split("\t")
        if header is None:
            header = fields
            continue
        if len(fields) != len(header):
            raise DataFormatError.at(
                path,
                number,
                f"{len(fields)} tab-separated fields, the header has {len(header)}",
                FIX,
            )
        yield number, dict(zip(header, fields, strict=True))


def _jsonl(spec: TaskSpec, path: Path) -> Iterator[tuple[int | None, dict]]:
    for number, line in iter_lines(path, spec.name):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataFormatError.at(path, number, f"invalid JSON ({err.msg})", FIX) from None
        if not isinstance(record, dict):
            raise DataFormatError.at(path, number, "expected one JSON object per line", FIX)
        yield number, record


def _hub(spec: TaskSpec, split: str) -> Iterator[tuple[int | None, dict]]:
    from datasets import load_dataset

    dataset = spec.data["dataset"]
    rows = load_dataset(
        dataset["path"],
        dataset.get("name"),
        revision=dataset["revision"],
        split=dataset["splits"][split],
    )
    for number, row in enumerate(rows, start=1):
        yield number, dict(row)


def _value(spec: TaskSpec, column: str, raw, where, number):
    """A file's value as the prepared column holds it, checked against the task's labels."""

    def bad(problem: str):
        return DataFormatError.at(where, number, f"{column}: {problem}", FIX)

    if column in ("tokens", "tags", "labels") and isinstance(raw, str):
        raw = [part.strip() for part in raw.split(",") if part.strip()]  # TSV label sets
    if column in ("tokens", "tags", "labels") and not isinstance(raw, list):
        raise bad(f"expected a list, found {raw!r}")
    if column == "score":
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise bad(f"{raw!r} is not a number") from None
    labels = set(spec.labels)
    if column == "label" and str(raw) not in labels:
        raise bad(f"{raw!r} is not one of the task's labels ({', '.join(spec.labels)})")
    if column in ("tags", "labels") and not {str(x) for x in raw} <= labels:
        unknown = sorted({str(x) for x in raw} - labels)
        raise bad(f"{', '.join(unknown)} not among the task's labels ({', '.join(spec.labels)})")
    if column in ("tokens", "tags", "labels"):
        return [str(x) for x in raw]
    return (
        str(raw) if column in ("label", "text", "text_a", "text_b", "question", "context") else raw
    )


def _row(spec: TaskSpec, record: dict, split: str, index: int, where, number) -> dict:
    names = spec.data.get("columns") or {}
    row = {"id": str(record.get(names.get("id", "id"), f"{split}-{index}"))}
    for column in spec.kind.columns[2:]:
        name = names.get(column, column)
        if name in record:
            row[column] = _value(spec, column, record[name], where, number)
        elif column in OPTIONAL:
            row[column] = OPTIONAL[column]
        else:
            raise DataFormatError.at(
                where,
                number,
                f"no {name!r} field (the {column} column); "
                f"map it with tasks.{spec.name}.columns.{column}",
                FIX,
            )
    if "tokens" in row and len(row["tokens"]) != len(row["tags"]):
        raise DataFormatError.at(
            where, number, f"{len(row['tokens'])} tokens but {len(row['tags'])} tags", FIX
        )
    if spec.kind.inputs == "text" and row.get("sentences", 0) is None:
        row["sentences"] = [row["text"]]  # one "sentence": the whole document
        row["sentence_labels"] = [row["labels"]]
    return row


READERS = {"conll": _conll, "tsv": _tsv, "jsonl": _jsonl}


def parse(spec: TaskSpec, raw_root: Path) -> dict[str, pd.DataFrame]:
    """Each split's file (or dataset split) as a frame of the task type's columns."""
    frames = {}
    fmt = spec.data["format"]
    for split in SPLITS:
        if fmt == "squad":  # whole questions in the prepared columns already
            where = Path(spec.data["files"][split])
            frames[split] = span_frame(split, [squad_row(e) for e in read_squad(where, spec.name)])
            if frames[split].empty:
                raise DataFormatError.at(where, None, f"no questions in the {split} split", FIX)
            continue
        if fmt == "hf":
            where = f"{spec.data['dataset']['path']}[{split}]"
            records = _hub(spec, split)
        else:
            where = Path(spec.data["files"][split])
            records = READERS[fmt](spec, where)
        rows = [
            _row(spec, record, split, i, where, number)
            for i, (number, record) in enumerate(records)
        ]
        if not rows:
            raise DataFormatError.at(where, None, f"no instances in the {split} split", FIX)
        frames[split] = make_frame(spec.type, split, rows)
    return frames
