"""GAD (and EU-ADR) from BioBERT's REdata: `{folder}/{fold}/train.tsv` (sentence<TAB>label, no
header) and `{folder}/{fold}/test.tsv` (header `index<TAB>sentence<TAB>label`). BLURB uses GAD
fold 1: train = the first `train_lines` lines of train.tsv, dev = the rest; a cross-validation
fold (`dev_fraction`) holds out the same share of its train file's last lines as dev. Entities
are already `@GENE$`/`@DISEASE$`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError
from blurbflow.data.parsers.common import iter_lines, make_frame, tab_fields
from blurbflow.tasks.registry import TaskSpec

SOURCE = "gad"
LABELS = ("0", "1")
TEST_HEADER = ("index", "sentence", "label")
FIX = "check the file is the BioBERT REdata GAD fold file (re-download the gad source)"
# GAD has no entity spans or original text: the RE columns that other tasks fill stay empty.
NO_SPANS = {
    "original_text": None,
    "e1_start": None,
    "e1_end": None,
    "e2_start": None,
    "e2_end": None,
    "e1_type": None,
    "e2_type": None,
}


def _rows(
    path: Path, columns: tuple[str, ...], skip_header: bool, source: str = SOURCE
) -> list[tuple[int, list[str]]]:
    rows = []
    for number, line in iter_lines(path, source):
        if number == 1 and skip_header and tuple(line.split("\t")) == TEST_HEADER:
            continue
        fields = tab_fields(path, number, line, columns, FIX)
        if fields[-1].strip() not in LABELS:
            raise DataFormatError.at(path, number, f"label {fields[-1]!r} is not one of 0, 1", FIX)
        rows.append((number, [f.strip() for f in fields]))
    return rows


def _record(row_id: str, fields: list[str]) -> dict:
    return {"id": row_id, "text": fields[-2], "label": fields[-1], **NO_SPANS}


def parse(spec: TaskSpec, raw_root: Path) -> dict[str, pd.DataFrame]:
    fold = spec.options.get("fold", 1)
    source = spec.sources[0] if spec.sources else SOURCE
    folder = raw_root / source / spec.options.get("folder", "GAD") / str(fold)
    train_path = folder / "train.tsv"
    train_rows = _rows(train_path, ("sentence", "label"), skip_header=False, source=source)
    if "train_lines" in spec.options:
        train_lines = spec.options["train_lines"]
    else:  # a fold: the same share of its lines held out as BLURB's fold 1 holds out
        train_lines = len(train_rows) - round(len(train_rows) * spec.options["dev_fraction"])
    if len(train_rows) <= train_lines or train_lines < 1:
        raise DataFormatError.at(
            train_path,
            None,
            f"has {len(train_rows)} lines; BLURB takes the first {train_lines} as train and the "
            "rest as dev, so it needs more",
            FIX,
        )
    test_rows = _rows(folder / "test.tsv", TEST_HEADER, skip_header=True, source=source)
    # Ids keep the origin: train/dev by line of train.tsv, test by its index column.
    return {
        "train": make_frame(
            spec.type, "train", [_record(f"train-{n}", f) for n, f in train_rows[:train_lines]]
        ),
        "dev": make_frame(
            spec.type, "dev", [_record(f"dev-{n}", f) for n, f in train_rows[train_lines:]]
        ),
        "test": make_frame(spec.type, "test", [_record(f"test-{f[0]}", f) for _, f in test_rows]),
    }
