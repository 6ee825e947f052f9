"""Tokenize a prepared task once per (tokenizer, task, input options) into parquet that every cell
with that key reuses (`blurbflow.options.InputOptions.key`). Word-level tasks label the first
sub-token of each word (in the `tagging` scheme); the rest get -100.

Input options (docs/recipes.md): `segment_ids` (QA/STS: `pair` keeps token type ids 0/1, `single`
sets them all to 0), `tagging` (NER/PICO, see `blurbflow.train.tagging`) and `re_input` (RE:
`dummify` = the prepared text with @CHEMICAL$-style placeholders, `markers` = the original text
with `[E1] … [/E1]` and `[E2] … [/E2]` around the entities, `original` = the original text).

RE rows also carry the entities' token positions for `re_pooling`: `e1_span`/`e2_span` =
[first, last + 1) of the mention's tokens (the placeholder's with `dummify`; inside the markers
with `markers`) and `e1_pos`/`e2_pos` = the start token ([E1]/[E2] with markers, else the first
mention token). An entity cut off by truncation points at [CLS] (position 0, span [0, 1)); the
counts are in meta.json (`entities_truncated`, `entities_not_found`).

Extractive-QA rows are windows over the context (`blurbflow.train.encode_span`); meta.json
records their `windows` settings and, per split, `examples` and `answers_outside_windows`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from blurbflow.options import InputOptions
from blurbflow.stage_versions import tokenize_versions
from blurbflow.tasks import TaskSpec
from blurbflow.train import tagging as tagging_schemes
from blurbflow.train.encode_re import encode_entities
from blurbflow.train.encode_span import encode_windows, window_settings
from blurbflow.util.artefacts import write_record

IGNORE = -100
SPLITS = ("train", "dev", "test")


def _words(frame, spec, tokenizer, inputs: InputOptions, columns, counts):
    """Word-level tasks: the first sub-token of each word carries its tag in the scheme."""
    labels_of = tagging_schemes.scheme_labels(spec.type, spec.labels, inputs.tagging)
    label_index = {label: i for i, label in enumerate(labels_of)}
    enc = tokenizer(
        [list(t) for t in frame["tokens"]],
        is_split_into_words=True,
        truncation=True,
        max_length=inputs.max_length,
    )
    labels = []
    for row, gold in enumerate(frame["tags"]):
        tags = tagging_schemes.to_scheme(list(gold), inputs.tagging, spec.type)
        previous, row_labels = None, []
        for word in enc.word_ids(row):
            first = word is not None and word != previous
            row_labels.append(label_index[tags[word]] if first else IGNORE)
            previous = word
        labels.append(row_labels)
    columns["labels"] = labels
    columns["n_words"] = [len(t) for t in frame["tokens"]]
    return enc


def _text(frame, spec, tokenizer, inputs: InputOptions, columns, counts):
    return tokenizer(list(frame["text"]), truncation=True, max_length=inputs.max_length)


def _pair(first: str, second: str, truncation):
    """Two texts joined by [SEP]; pair inputs always carry token type ids (some fast tokenizers
    omit them by default)."""

    def encode(frame, spec, tokenizer, inputs: InputOptions, columns, counts):
        return tokenizer(
            list(frame[first]),
            list(frame[second]),
            truncation=truncation,
            max_length=inputs.max_length,
            return_token_type_ids=True,
        )

    return encode


def _entities(frame, spec, tokenizer, inputs: InputOptions, columns, counts):
    return encode_entities(
        frame, spec, tokenizer, inputs.max_length, inputs.re_input, columns, counts
    )


def _windows(frame, spec, tokenizer, inputs: InputOptions, columns, counts):
    return encode_windows(frame, spec, tokenizer, inputs.max_length, columns, counts)


# TaskType.inputs -> encoder of a prepared frame (fills `columns`, returns the tokenizer output)
ENCODERS = {
    "words": _words,
    "text": _text,
    "pair": _pair("text_a", "text_b", True),
    "question": _pair("question", "context", "only_second"),
    "entities": _entities,
    "windows": _windows,
}
# TaskType.target -> the training targets of a sequence-level task ("tags": set by `_words`)
TARGETS = {
    "label": lambda frame, spec: [spec.labels.index(str(x)) for x in frame["label"]],
    "labels": lambda frame, spec: [
        [1.0 if label in set(labels) else 0.0 for label in spec.labels]
        for labels in frame["labels"]
    ],
    "score": lambda frame, spec: frame["score"].astype(float).tolist(),
}


def _encode_frame(
    frame: pd.DataFrame,
    spec: TaskSpec,
    tokenizer,
    inputs: InputOptions,
    counts: dict | None = None,
) -> dict:
    counts = {"entities_truncated": 0, "entities_not_found": 0} if counts is None else counts
    kind, segment_ids = spec.kind, inputs.segment_ids
    columns: dict[str, list] = {"id": frame["id"].astype(str).tolist()}
    enc = ENCODERS[kind.inputs](frame, spec, tokenizer, inputs, columns, counts)
    if kind.target in TARGETS:
        columns["label"] = TARGETS[kind.target](frame, spec)
    columns["input_ids"] = enc["input_ids"]
    if "token_type_ids" in enc:
        columns["token_type_ids"] = enc["token_type_ids"]
        if "segment_ids" in kind.input_options:
            if segment_ids == "single":  # one segment: the pair stays joined by [SEP]
                columns["token_type_ids"] = [[0] * len(t) for t in enc["token_type_ids"]]
            elif segment_ids != "pair":
                raise ValueError(f"segment_ids: unknown {segment_ids!r}; use pair or single")
    columns["length"] = [len(ids) for ids in enc["input_ids"]]
    return columns


def encode_task(
    spec: TaskSpec,
    data_dir: Path,
    tokenizer,
    inputs: InputOptions,
    out_dir: Path,
    settings: dict | None = None,
) -> dict:
    """Write {train,dev,test}.parquet + meta.json to out_dir (built in a temp dir, then renamed).
    With `re_input: markers` the entity markers are added to `tokenizer` (deterministically, as
    `models.load.load_tokenizer(entity_markers=True)` does for the model)."""
    from blurbflow.models.load import add_entity_markers, lowercases

    out_dir = Path(out_dir)
    kind = spec.kind
    entities, windows = kind.inputs == "entities", kind.inputs == "windows"
    max_length = inputs.max_length
    added = add_entity_markers(tokenizer) if entities and inputs.re_input == "markers" else {}
    recorded = {"max_length": max_length, **{k: getattr(inputs, k) for k in kind.input_options}}
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        meta = {
            "task": spec.name,
            "max_length": max_length,
            "inputs": recorded,
            "tokenizer": tokenizer.name_or_path,
            "vocab_size": len(tokenizer),
            "lowercases": lowercases(tokenizer),
            "pad_id": tokenizer.pad_token_id or 0,
            "added_tokens": added,
            "splits": {},
            # the code's numbers (blurbflow.stage_versions); `settings`: the model's tokenizer ones
            "versions": tokenize_versions(spec, settings),
        }
        if windows:  # only span tasks: other tasks' meta.json (their identity) stays as it was
            meta["windows"] = window_settings(spec, max_length)
        if kind.token_level:
            meta["labels"] = list(
                tagging_schemes.scheme_labels(spec.type, spec.labels, inputs.tagging)
            )
        for split in SPLITS:
            clock = time.monotonic()
            frame = pd.read_parquet(Path(data_dir) / f"{split}.parquet")
            print(f"{spec.name} {split}: tokenizing {len(frame)} instances", flush=True)
            counts = {} if windows else {"entities_truncated": 0, "entities_not_found": 0}
            columns = _encode_frame(frame, spec, tokenizer, inputs, counts=counts)
            pq.write_table(pa.table(columns), tmp / f"{split}.parquet")
            lengths = columns["length"]
            meta["splits"][split] = {
                "instances": len(lengths),
                "tokens": int(sum(lengths)),
                "truncated": int(sum(n >= max_length for n in lengths)),
                **(counts if entities or windows else {}),
            }
            print(
                f"{spec.name} {split}: {len(lengths)} instances, {sum(lengths)} tokens, "
                f"{meta['splits'][split]['truncated']} truncated to {max_length}, "
                f"{time.monotonic() - clock:.1f} s",
                flush=True,
            )
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
        write_record(tmp, "tokenized")  # what readers verify before use (blurbflow.util.artefacts)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return meta


class RaggedColumn(Sequence):
    """A parquet list column kept as flat numpy values + offsets; row i becomes a Python list
    only when asked for (converting a whole large split costs a cell's start-up), and a batch
    is gathered from the flat values at once (`padded`)."""

    def __init__(self, column: pa.ChunkedArray):
        array = column.combine_chunks()
        self._offsets = array.offsets.to_numpy()
        self._values = array.values.to_numpy(zero_copy_only=False)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._values[self._offsets[index] : self._offsets[index + 1]].tolist()

    def lengths(self, rows) -> np.ndarray:
        """The lengths of rows `rows`."""
        rows = np.asarray(rows, dtype=np.int64)
        return self._offsets[rows + 1] - self._offsets[rows]

    def padded(self, rows, width: int, fill) -> np.ndarray:
        """Rows `rows` as one (len(rows), width) array, each cut at `width` and padded with
        `fill`, gathered straight from the flat values (no per-row Python lists)."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, lengths = self._offsets[rows], self.lengths(rows)
        inside = np.arange(width)[None, :] < lengths[:, None]
        out = np.full((len(rows), width), fill, dtype=self._values.dtype)
        out[inside] = self._values[(starts[:, None] + np.arange(width)[None, :])[inside]]
        return out

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # mutable-looking sequence semantics, as list


def load_encoded(out_dir: Path, split: str) -> dict[str, Sequence]:
    """An encoded split: flat list columns as RaggedColumn, everything else as Python lists."""
    table = pq.read_table(Path(out_dir) / f"{split}.parquet")
    columns: dict[str, Sequence] = {}
    for name in table.column_names:
        column = table.column(name)
        flat_list = pa.types.is_list(column.type) and not pa.types.is_nested(column.type.value_type)
        columns[name] = RaggedColumn(column) if flat_list else column.to_pylist()
    return columns


def load_meta(out_dir: Path) -> dict:
    path = Path(out_dir) / "meta.json"
    return json.loads(path.read_text()) if path.exists() else {}
