"""Tokenize a prepared task once per (tokenizer, task, input options) into parquet that every cell
with that key reuses (`blurbflow.config.input_key`). Word-level tasks label the first sub-token
of each word (in the `tagging` scheme); the rest get -100.

Input options (DESIGN §6): `segment_ids` (QA/STS: `pair` keeps token type ids 0/1, `single`
sets them all to 0), `tagging` (NER/PICO, see `blurbflow.train.tagging`) and `re_input` (RE:
`dummify` = the prepared text with @CHEMICAL$-style placeholders, `markers` = the original text
with `[E1] … [/E1]` and `[E2] … [/E2]` around the entities, `original` = the original text).

RE rows also carry the entities' token positions for `re_pooling`: `e1_span`/`e2_span` =
[first, last + 1) of the mention's tokens (the placeholder's with `dummify`; inside the markers
with `markers`) and `e1_pos`/`e2_pos` = the start token ([E1]/[E2] with markers, else the first
mention token). An entity cut off by truncation points at [CLS] (position 0, span [0, 1)); the
counts are in meta.json (`entities_truncated`, `entities_not_found`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from blurbflow.tasks import TaskSpec
from blurbflow.train import tagging as tagging_schemes

IGNORE = -100
SPLITS = ("train", "dev", "test")
# Entity placeholders of dummified RE text: @CHEMICAL$, @GENE$, @CHEM-GENE$, @DRUG$, @DISEASE$ …
PLACEHOLDER = re.compile(r"@[A-Z][A-Za-z-]*\$")
RE_INPUTS = ("dummify", "markers", "original")


def _marked(text: str, spans: list[tuple[int, int]]) -> tuple[str, list, list]:
    """`text` with [E1] … [/E1], [E2] … [/E2] inserted around the two character spans; returns
    the new text, each mention's span in it and each opening marker's start."""
    events = []  # (position, order at a tie, piece, entity, what)
    for k, (start, end) in enumerate(spans):
        # at one position: closings first (the later-opened entity first), then openings
        events.append((end, 0, 1 - k, f" [/E{k + 1}]", k, "close"))
        events.append((start, 1, k, f"[E{k + 1}] ", k, "open"))
    out, last = [], 0
    length = 0
    mentions = [[0, 0], [0, 0]]
    markers = [0, 0]
    for position, _, _, piece, k, what in sorted(events):
        out.append(text[last:position])
        length += position - last
        last = position
        if what == "open":
            markers[k] = length
            mentions[k][0] = length + len(piece)
        else:
            mentions[k][1] = length
        out.append(piece)
        length += len(piece)
    out.append(text[last:])
    return "".join(out), [tuple(m) for m in mentions], markers


def _token_span(offsets, start: int, end: int) -> tuple[int, int] | None:
    inside = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    return (inside[0], inside[-1] + 1) if inside else None


def _re_inputs(frame: pd.DataFrame, spec: TaskSpec, re_input: str):
    """Texts, each row's two entity character spans (None: not found) and marker starts."""
    if re_input not in RE_INPUTS:
        raise ValueError(f"re_input: unknown {re_input!r}; use one of {', '.join(RE_INPUTS)}")
    texts, entities, markers = [], [], []
    if re_input == "dummify":
        for text in frame["text"].astype(str):
            found = [m.span() for m in PLACEHOLDER.finditer(text)]
            if len(found) == 1:  # overlapping entities share one placeholder (@CHEM-GENE$)
                found = found * 2
            texts.append(text)
            entities.append(found if len(found) == 2 else None)
            markers.append(None)
        return texts, entities, markers
    columns = ("original_text", "e1_start", "e1_end", "e2_start", "e2_end")
    for row in frame.itertuples(index=False):
        values = [getattr(row, c, None) for c in columns]
        if any(v is None or (isinstance(v, float) and v != v) for v in values):
            raise ValueError(
                f"task {spec.name}: re_input={re_input!r} needs the original text and entity "
                f"spans (original_text, e1_start … e2_end), which row {row.id!r} lacks — "
                f"{spec.name}'s text comes already dummified; use re_input: dummify for "
                f"{spec.name}"
            )
        text, s1, t1, s2, t2 = values[0], *(int(v) for v in values[1:])
        if re_input == "markers":
            text, spans, starts = _marked(str(text), [(s1, t1), (s2, t2)])
        else:
            spans, starts = [(s1, t1), (s2, t2)], None
        texts.append(str(text))
        entities.append(spans)
        markers.append(starts)
    return texts, entities, markers


def _encode_re(frame, spec, tokenizer, max_length, re_input, columns, counts) -> dict:
    texts, entities, markers = _re_inputs(frame, spec, re_input)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"task {spec.name}: entity positions need a fast tokenizer (offset mappings); "
            f"{type(tokenizer).__name__} is not one"
        )
    enc = tokenizer(texts, truncation=True, max_length=max_length, return_offsets_mapping=True)
    for k in (1, 2):
        columns[f"e{k}_span"], columns[f"e{k}_pos"] = [], []
    for row, offsets in enumerate(enc["offset_mapping"]):
        for k in (0, 1):
            span = start = None
            if entities[row] is None:
                counts["entities_not_found"] += 1
            else:
                span = _token_span(offsets, *entities[row][k])
                start = span[0] if span else None
                if markers[row] is not None:
                    marker = _token_span(offsets, markers[row][k], markers[row][k] + 4)
                    start = marker[0] if marker else None
                if span is None or start is None:
                    counts["entities_truncated"] += 1
            columns[f"e{k + 1}_span"].append(list(span) if span and start is not None else [0, 1])
            columns[f"e{k + 1}_pos"].append(start if span and start is not None else 0)
    return enc


def _encode_frame(
    frame: pd.DataFrame,
    spec: TaskSpec,
    tokenizer,
    max_length: int,
    *,
    segment_ids: str = "pair",
    tagging: str = "BIO",
    re_input: str = "dummify",
    counts: dict | None = None,
) -> dict:
    counts = {"entities_truncated": 0, "entities_not_found": 0} if counts is None else counts
    columns: dict[str, list] = {"id": frame["id"].astype(str).tolist()}
    if spec.type in ("ner", "pico"):
        labels_of = tagging_schemes.scheme_labels(spec.type, spec.labels, tagging)
        label_index = {label: i for i, label in enumerate(labels_of)}
        enc = tokenizer(
            [list(t) for t in frame["tokens"]],
            is_split_into_words=True,
            truncation=True,
            max_length=max_length,
        )
        labels = []
        for row, gold in enumerate(frame["tags"]):
            tags = tagging_schemes.to_scheme(list(gold), tagging, spec.type)
            previous, row_labels = None, []
            for word in enc.word_ids(row):
                first = word is not None and word != previous
                row_labels.append(label_index[tags[word]] if first else IGNORE)
                previous = word
            labels.append(row_labels)
        columns["labels"] = labels
        columns["n_words"] = [len(t) for t in frame["tokens"]]
    else:
        label_index = {label: i for i, label in enumerate(spec.labels)}
        # pair inputs always carry token type ids (some fast tokenizers omit them by default)
        if spec.type == "sts":
            enc = tokenizer(
                list(frame["text_a"]),
                list(frame["text_b"]),
                truncation=True,
                max_length=max_length,
                return_token_type_ids=True,
            )
            columns["label"] = frame["score"].astype(float).tolist()
        elif spec.type == "qa":
            enc = tokenizer(
                list(frame["question"]),
                list(frame["context"]),
                truncation="only_second",
                max_length=max_length,
                return_token_type_ids=True,
            )
            columns["label"] = [label_index[x] for x in frame["label"]]
        elif spec.type == "doccls":
            enc = tokenizer(list(frame["text"]), truncation=True, max_length=max_length)
            columns["label"] = [
                [1.0 if label in set(labels) else 0.0 for label in spec.labels]
                for labels in frame["labels"]
            ]
        else:  # re
            enc = _encode_re(frame, spec, tokenizer, max_length, re_input, columns, counts)
            columns["label"] = [label_index[str(x)] for x in frame["label"]]
    columns["input_ids"] = enc["input_ids"]
    if "token_type_ids" in enc:
        columns["token_type_ids"] = enc["token_type_ids"]
        if spec.type in ("qa", "sts"):
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
    max_length: int,
    out_dir: Path,
    *,
    segment_ids: str = "pair",
    tagging: str = "BIO",
    re_input: str = "dummify",
) -> dict:
    """Write {train,dev,test}.parquet + meta.json to out_dir (built in a temp dir, then renamed).
    With re_input=markers the entity markers are added to `tokenizer` (deterministically, as
    `models.load.load_tokenizer(entity_markers=True)` does for the model)."""
    from blurbflow.models.load import add_entity_markers, lowercases

    out_dir = Path(out_dir)
    added = add_entity_markers(tokenizer) if spec.type == "re" and re_input == "markers" else {}
    inputs = {"max_length": max_length}
    if spec.type in ("ner", "pico"):
        inputs["tagging"] = tagging
    elif spec.type == "re":
        inputs["re_input"] = re_input
    elif spec.type in ("qa", "sts"):
        inputs["segment_ids"] = segment_ids
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        meta = {
            "task": spec.name,
            "max_length": max_length,
            "inputs": inputs,
            "tokenizer": tokenizer.name_or_path,
            "vocab_size": len(tokenizer),
            "lowercases": lowercases(tokenizer),
            "pad_id": tokenizer.pad_token_id or 0,
            "added_tokens": added,
            "splits": {},
        }
        if spec.type in ("ner", "pico"):
            meta["labels"] = list(tagging_schemes.scheme_labels(spec.type, spec.labels, tagging))
        for split in SPLITS:
            clock = time.monotonic()
            frame = pd.read_parquet(Path(data_dir) / f"{split}.parquet")
            print(f"{spec.name} {split}: tokenizing {len(frame)} instances", flush=True)
            counts = {"entities_truncated": 0, "entities_not_found": 0}
            columns = _encode_frame(
                frame,
                spec,
                tokenizer,
                max_length,
                segment_ids=segment_ids,
                tagging=tagging,
                re_input=re_input,
                counts=counts,
            )
            pq.write_table(pa.table(columns), tmp / f"{split}.parquet")
            lengths = columns["length"]
            meta["splits"][split] = {
                "instances": len(lengths),
                "tokens": int(sum(lengths)),
                "truncated": int(sum(n >= max_length for n in lengths)),
                **(counts if spec.type == "re" else {}),
            }
            print(
                f"{spec.name} {split}: {len(lengths)} instances, {sum(lengths)} tokens, "
                f"{meta['splits'][split]['truncated']} truncated to {max_length}, "
                f"{time.monotonic() - clock:.1f} s",
                flush=True,
            )
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return meta


class RaggedColumn(Sequence):
    """A parquet list column kept as flat numpy values + offsets; row i becomes a Python list
    only when a batch asks for it (converting a whole large split costs a cell's start-up)."""

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
