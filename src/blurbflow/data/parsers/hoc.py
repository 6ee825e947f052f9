"""Hallmarks of Cancer with BLURB's split lists.

`text/{PMID}.txt` holds one sentence a line; `labels/{PMID}.txt` is one line of per-sentence
chunks (`split('<')[1:]`), each holding labels joined by `AND`; a label is the part before `--`,
lower-cased and stripped, `NULL` skipped. An abstract's labels are the union of its sentences'.
The split lists (`indexing/HoC/{split}_pmid.tsv`) are comma-separated `{PMID}.txt` names.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError, redownload
from blurbflow.data.parsers.common import SPLITS, iter_lines, make_frame, read_index_list
from blurbflow.tasks.registry import HOC_HALLMARKS, TaskSpec

SOURCE, INDEX = "hoc", "blurb-index"
ROOT = "Hallmarks-of-Cancer-master"
INDEX_DIR = "data_generation/indexing/HoC"


def split_files(raw_root: Path, split: str) -> list[str]:
    path = raw_root / INDEX / INDEX_DIR / f"{split}_pmid.tsv"
    return read_index_list(
        path, lambda name: name.endswith(".txt") and name[:-4].isdigit(), "a {PMID}.txt name"
    )


def sentence_labels(path: Path, sentences: int) -> list[list[str]]:
    """Per-sentence hallmark names from a labels file."""
    lines = [(n, line) for n, line in iter_lines(path, SOURCE) if line.strip()]
    if len(lines) > 1:
        raise DataFormatError.at(
            path, lines[1][0], "expected the labels on one line", redownload(SOURCE)
        )
    number, line = lines[0] if lines else (1, "")
    chunks = line.split("<")[1:]
    if len(chunks) != sentences:
        raise DataFormatError.at(
            path,
            number,
            f"{len(chunks)} '<' label chunks for {sentences} text sentences",
            redownload(SOURCE),
        )
    out = []
    for chunk in chunks:
        names = set()
        for label in chunk.split("AND"):
            name = label.split("--")[0].strip().lower()
            if not name or name == "null":
                continue
            if name not in HOC_HALLMARKS:
                raise DataFormatError.at(
                    path,
                    number,
                    f"label {label.strip()!r} is not one of the 10 hallmarks",
                    redownload(SOURCE),
                )
            names.add(name)
        out.append(sorted(names))
    return out


def read_abstract(raw_root: Path, name: str) -> dict:
    text_path = raw_root / SOURCE / ROOT / "text" / name
    sentences = [line.strip() for _, line in iter_lines(text_path, SOURCE) if line.strip()]
    labels = sentence_labels(raw_root / SOURCE / ROOT / "labels" / name, len(sentences))
    return {
        "id": name.removesuffix(".txt"),
        "text": " ".join(sentences),
        "labels": sorted(set().union(*labels)),
        "sentences": sentences,
        "sentence_labels": labels,
    }


def parse(spec: TaskSpec, raw_root: Path) -> dict[str, pd.DataFrame]:
    return {
        split: make_frame(
            spec.type,
            split,
            [read_abstract(raw_root, name) for name in split_files(raw_root, split)],
        )
        for split in SPLITS
    }
