"""BIOSSES `annotation_pairs_scores.tsv`: header, then `id<TAB>sentence_1<TAB>sentence_2` and five
annotator scores 0-4. score = their mean; BLUE's fixed split ids are embedded in the package.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError, redownload
from blurbflow.data.parsers.common import biosses_split_ids, iter_lines, make_frame
from blurbflow.tasks.registry import TaskSpec

SOURCE = "biosses"
FILE = "annotation_pairs_scores.tsv"
ANNOTATORS = 5


def _score(path: Path, number: int, field: str) -> float:
    try:
        value = float(field)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 4:
        raise DataFormatError.at(
            path, number, f"annotator score {field!r} is not a number 0-4", redownload(SOURCE)
        )
    return value


def read_pairs(path: Path) -> dict[int, dict]:
    pairs: dict[int, dict] = {}
    for number, line in iter_lines(path, SOURCE):
        fields = line.split("\t")
        if number == 1:
            if fields[0].strip() != "sentence_id":
                raise DataFormatError.at(
                    path, 1, "missing the header line (sentence_id ...)", redownload(SOURCE)
                )
            continue
        if len(fields) != 3 + ANNOTATORS:
            raise DataFormatError.at(
                path,
                number,
                f"expected {3 + ANNOTATORS} tab-separated columns (sentence_id, sentence_1, "
                f"sentence_2, 5 annotator scores), found {len(fields)}",
                redownload(SOURCE),
            )
        if not fields[0].strip().isdigit() or int(fields[0]) in pairs:
            raise DataFormatError.at(
                path, number, f"bad or repeated sentence_id {fields[0]!r}", redownload(SOURCE)
            )
        scores = [_score(path, number, f) for f in fields[3:]]
        pairs[int(fields[0])] = {
            "id": str(int(fields[0])),
            "text_a": fields[1].strip(),
            "text_b": fields[2].strip(),
            "score": sum(scores) / len(scores),
        }
    return pairs


def parse(spec: TaskSpec, raw_root: Path) -> dict[str, pd.DataFrame]:
    path = raw_root / SOURCE / FILE
    pairs = read_pairs(path)
    frames = {}
    for split, ids in biosses_split_ids().items():
        missing = sorted(set(ids) - set(pairs))
        if missing:
            raise DataFormatError.at(
                path,
                None,
                f"pairs {missing[:5]} of BLUE's {split} split are missing",
                redownload(SOURCE),
            )
        frames[split] = make_frame(spec.type, split, [pairs[i] for i in sorted(ids)])
    return frames
