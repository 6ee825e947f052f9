"""EBM-NLP 2.00 PICO spans with BLURB's split lists.

Raw layout: `ebmnlp/ebm_nlp_2_00/documents/{PMID}.tokens` (one token a line) and
`ebmnlp/ebm_nlp_2_00/annotations/aggregated/starting_spans/{element}/{folder}/{PMID}.AGGREGATED.ann`
(one 0/1 a line, one line per token) for the elements participants, interventions, outcomes;
folder `train` for BLURB's train and dev documents, `test/gold` for its test documents. The
splits are the comma-separated PMIDs of `blurb-index/data_generation/indexing/ebmnlp/
{train,dev,test}_pmid.tsv`.

Tags: I-PAR, I-INT, I-OUT or O; where spans overlap, Outcome > Intervention > Participant. A
document is split into sentences after each "." token; each sentence is one instance.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError, redownload
from blurbflow.data.parsers.common import SPLITS, iter_lines, make_frame, read_index_list
from blurbflow.tasks.registry import TaskSpec

SOURCE, INDEX = "ebmnlp", "blurb-index"
ROOT = "ebm_nlp_2_00"
INDEX_DIR = "data_generation/indexing/ebmnlp"
ANN_DIR = "annotations/aggregated/starting_spans"
# element folder -> tag, in increasing precedence: a later element wins on overlap.
ELEMENTS = {"participants": "I-PAR", "interventions": "I-INT", "outcomes": "I-OUT"}
ANN_FOLDER = {"train": "train", "dev": "train", "test": "test/gold"}


def split_pmids(raw_root: Path, split: str) -> list[str]:
    path = raw_root / INDEX / INDEX_DIR / f"{split}_pmid.tsv"
    return read_index_list(path, str.isdigit, "a PMID")


def _items(path: Path) -> list[tuple[int, str]]:
    """(line number, item) for every whitespace-separated item (one a line in EBM-NLP)."""
    return [(number, item) for number, line in iter_lines(path, SOURCE) for item in line.split()]


def read_labels(path: Path, tokens_path: Path, count: int) -> list[bool]:
    """The per-token 0/1 flags of one .ann file, which must have one line per token."""
    items = _items(path)
    if len(items) != count:
        line = items[count][0] if len(items) > count else None
        raise DataFormatError.at(
            path,
            line,
            f"has {len(items)} labels but {tokens_path} has {count} tokens (one "
            "label per token expected)",
            redownload(SOURCE),
        )
    flags = []
    for number, item in items:
        if item not in ("0", "1"):
            raise DataFormatError.at(
                path, number, f"label {item!r} is not 0 or 1", redownload(SOURCE)
            )
        flags.append(item == "1")
    return flags


def document_tags(tokens_count: int, flags: dict[str, list[bool]]) -> list[str]:
    """Per-token tags from the element flags; Outcome > Intervention > Participant."""
    tags = ["O"] * tokens_count
    for element, tag in ELEMENTS.items():  # increasing precedence: later overwrites earlier
        for i, flag in enumerate(flags[element]):
            if flag:
                tags[i] = tag
    return tags


def sentences(tokens: list[str], tags: list[str]) -> list[tuple[list[str], list[str]]]:
    """Split after each "." token (a trailing piece without "." is a sentence too)."""
    out, start = [], 0
    for i, token in enumerate(tokens):
        if token == ".":
            out.append((tokens[start : i + 1], tags[start : i + 1]))
            start = i + 1
    if start < len(tokens):
        out.append((tokens[start:], tags[start:]))
    return out


def read_document(raw_root: Path, pmid: str, folder: str) -> list[tuple[list[str], list[str]]]:
    base = raw_root / SOURCE / ROOT
    tokens_path = base / "documents" / f"{pmid}.tokens"
    tokens = [item for _, item in _items(tokens_path)]
    flags = {
        element: read_labels(
            base / ANN_DIR / element / folder / f"{pmid}.AGGREGATED.ann", tokens_path, len(tokens)
        )
        for element in ELEMENTS
    }
    return sentences(tokens, document_tags(len(tokens), flags))


def parse(spec: TaskSpec, raw_root: Path) -> dict[str, pd.DataFrame]:
    frames = {}
    for split in SPLITS:
        rows = []
        for pmid in split_pmids(raw_root, split):
            for i, (tokens, tags) in enumerate(read_document(raw_root, pmid, ANN_FOLDER[split])):
                rows.append({"id": f"{pmid}-{i}", "tokens": tokens, "tags": tags})
        frames[split] = make_frame(spec.type, split, rows)
    return frames
