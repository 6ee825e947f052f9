"""BioASQ 7b yes/no questions with BLURB's split lists (a manual download: registration needed).

Raw layout (the two zips extracted into `bioasq/`): `BioASQ-training7b/trainining7b.json` (sic)
for train and dev, `Task7BGoldenEnriched/*.json` (7B1_golden.json ... 7B5_golden.json) for test;
each is `{"questions": [{"id", "type", "body", "snippets": [{"text", ...}], "exact_answer", ...}]}`.
Only `yesno` questions count; passage = the snippet texts joined by spaces; label = exact_answer
lower-cased. The splits are the comma-separated question ids of `blurb-index/data_generation/
indexing/BioASQ/{train,dev,test}_id.tsv`.

A missing manual file raises `ManualDownloadMissing`, which says which file is missing, where to
get it and where to put it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError, ManualDownloadMissing
from blurbflow.data.parsers.common import (
    SPLITS,
    line_of,
    make_frame,
    read_index_list,
    read_json,
    read_text,
)
from blurbflow.tasks.registry import TaskSpec
from blurbflow.tasks.sources import SOURCES

SOURCE, INDEX = "bioasq", "blurb-index"
TRAIN_FILE = "BioASQ-training7b/trainining7b.json"  # sic: the archive's own spelling
TEST_DIR = "Task7BGoldenEnriched"
INDEX_DIR = "data_generation/indexing/BioASQ"
ANSWERS = ("yes", "no")
FIX = (
    "check that this is the original BioASQ 7b file; delete the bioasq raw folder, put the "
    "original zips into the manual folder and re-run the workflow"
)


def missing(path: Path, folder: Path, what: str, archive: str) -> ManualDownloadMissing:
    """The error for a manual file that is not there: what, where to get it, where to put it."""
    manual = SOURCES[SOURCE].manual or "BioASQ needs a manual download"
    return ManualDownloadMissing.at(
        path,
        None,
        f"missing {what} of the BioASQ manual download",
        f"{manual}; then put {archive} into the manual folder (the `data.bioasq_dir` setting, "
        f"by default resources/manual/bioasq) and re-run the workflow, or extract it into "
        f"{folder}/ so that this file exists (looked in {folder})",
    )


def split_ids(raw_root: Path, split: str) -> list[str]:
    path = raw_root / INDEX / INDEX_DIR / f"{split}_id.tsv"
    return read_index_list(path, str.isalnum, "a BioASQ question id")


def _answer(value) -> str | None:
    if isinstance(value, list) and len(value) == 1:  # tolerate ["yes"]
        value = value[0]
    if not isinstance(value, str):
        return None
    answer = value.strip().lower()
    return answer if answer in ANSWERS else None


def read_questions(path: Path) -> dict[str, dict]:
    """The yes/no questions of one BioASQ JSON file, id -> record; other types are dropped."""
    data = read_json(path, SOURCE)
    questions = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(questions, list):
        raise DataFormatError.at(path, 1, 'expected an object with a "questions" list', FIX)
    records: dict[str, dict] = {}
    for number, entry in enumerate(questions):
        qid = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(qid, str) or not qid:
            raise DataFormatError.at(path, None, f"question #{number + 1} has no string id", FIX)

        def bad(problem: str, qid: str = qid) -> DataFormatError:
            return DataFormatError.at(
                path,
                line_of(read_text(path, SOURCE), f'"{qid}"'),
                f"question {qid}: {problem}",
                FIX,
            )

        if entry.get("type") != "yesno":
            continue
        body, snippets = entry.get("body"), entry.get("snippets", [])
        if not isinstance(body, str) or not body.strip():
            raise bad("missing body text")
        if not isinstance(snippets, list) or not all(
            isinstance(s, dict) and isinstance(s.get("text"), str) for s in snippets
        ):
            raise bad("snippets must be a list of objects with a text")
        answer = _answer(entry.get("exact_answer"))
        if answer is None:
            raise bad(f"exact_answer {entry.get('exact_answer')!r} is not yes or no")
        records.setdefault(
            qid,
            {
                "id": qid,
                "question": body.strip(),
                "context": " ".join(s["text"].strip() for s in snippets),
                "label": answer,
            },
        )
    return records


def _train_questions(raw_root: Path) -> dict[str, dict]:
    folder = raw_root / SOURCE
    path = folder / TRAIN_FILE
    if not path.is_file():
        raise missing(path, folder, "the training file", "BioASQ-training7b.zip")
    return read_questions(path)


def _test_questions(raw_root: Path) -> dict[str, dict]:
    folder = raw_root / SOURCE
    files = sorted((folder / TEST_DIR).glob("*.json")) if (folder / TEST_DIR).is_dir() else []
    if not files:
        raise missing(
            folder / TEST_DIR, folder, "the golden test files (*.json)", "Task7BGoldenEnriched.zip"
        )
    records: dict[str, dict] = {}
    for path in files:
        for qid, record in read_questions(path).items():
            records.setdefault(qid, record)
    return records


def parse(spec: TaskSpec, raw_root: Path) -> dict[str, pd.DataFrame]:
    pools = {"train": _train_questions(raw_root)}
    pools["dev"] = pools["train"]
    pools["test"] = _test_questions(raw_root)
    origin = {
        "train": raw_root / SOURCE / TRAIN_FILE,
        "dev": raw_root / SOURCE / TRAIN_FILE,
        "test": raw_root / SOURCE / TEST_DIR,
    }
    frames = {}
    for split in SPLITS:
        rows = []
        for qid in split_ids(raw_root, split):
            if qid not in pools[split]:
                raise DataFormatError.at(
                    raw_root / INDEX / INDEX_DIR / f"{split}_id.tsv",
                    None,
                    f"question {qid} is not a yes/no question of {origin[split]}",
                    "check that the BioASQ files are the original 7b ones (training7b for train "
                    "and dev, Task7BGoldenEnriched for test)",
                )
            rows.append(pools[split][qid])
        frames[split] = make_frame(spec.type, split, rows)
    return frames
