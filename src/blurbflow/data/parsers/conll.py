"""CoNLL-style NER files (Crichton et al.): `token<TAB>tag` lines, a blank line between sentences.

`-DOCSTART-` lines (with or without a document id, with or without a tag) are dropped; tags are
collapsed to untyped B/I/O by keeping their first character, so JNLPBA's 5 types merge (BLURB).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError, redownload
from blurbflow.data.parsers.common import iter_lines, make_frame, tab_fields
from blurbflow.tasks.registry import TaskSpec

SPLIT_FILES = {"train": "train.tsv", "dev": "devel.tsv", "test": "test.tsv"}
TAG = re.compile(r"O|[BI](-\S+)?")


def read_conll(path: Path, source: str) -> list[tuple[list[str], list[str]]]:
    """Sentences as (tokens, collapsed tags)."""
    sentences: list[tuple[list[str], list[str]]] = []
    tokens: list[str] = []
    tags: list[str] = []

    def close_sentence() -> None:
        nonlocal tokens, tags
        if tokens:
            sentences.append((tokens, tags))
        tokens, tags = [], []

    for number, line in iter_lines(path, source):
        if not line.strip() or line.startswith("-DOCSTART-"):
            close_sentence()
            continue
        token, tag = tab_fields(path, number, line, ("token", "tag"), redownload(source))
        tag = tag.strip()
        if not token.strip():
            raise DataFormatError.at(path, number, "empty token", redownload(source))
        if not TAG.fullmatch(tag):
            raise DataFormatError.at(
                path,
                number,
                f"unknown NER tag {tag!r} (expected O, B-<type> or I-<type>)",
                redownload(source),
            )
        tokens.append(token)
        tags.append(tag[0])
    close_sentence()
    return sentences


def parse(spec: TaskSpec, raw_root: Path) -> dict[str, pd.DataFrame]:
    (source,) = spec.sources
    # option `folder`: where the files lie inside an extracted archive (BioBERT's s800)
    folder = raw_root / source / getattr(spec, "options", {}).get("folder", "")
    frames = {}
    for split, name in SPLIT_FILES.items():
        sentences = read_conll(folder / name, source)
        rows = [
            {"id": f"{split}-{i}", "tokens": tokens, "tags": tags}
            for i, (tokens, tags) in enumerate(sentences)
        ]
        frames[split] = make_frame(spec.type, split, rows)
    return frames
