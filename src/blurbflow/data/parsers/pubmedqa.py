"""PubMedQA PQA-L: `ori_pqal.json` (PMID -> QUESTION, CONTEXTS, ..., final_decision) and
`test_ground_truth.json` (test PMID -> decision). BLURB: test = the ground-truth PMIDs, dev = the
50 PMIDs of fold 0 (embedded), train = the rest; context = the CONTEXTS joined by spaces.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError, redownload
from blurbflow.data.parsers.common import (
    line_of,
    make_frame,
    pubmedqa_fold0_dev_pmids,
    read_json,
    read_text,
)
from blurbflow.tasks.registry import TaskSpec

SOURCE = "pubmedqa"
DECISIONS = ("yes", "no", "maybe")


def _record(path: Path, pmid: str, entry) -> dict:
    def bad(problem: str) -> DataFormatError:
        line = line_of(read_text(path, SOURCE), f'"{pmid}"')
        return DataFormatError.at(path, line, f"PMID {pmid}: {problem}", redownload(SOURCE))

    if not isinstance(entry, dict):
        raise bad("expected an object")
    question, contexts = entry.get("QUESTION"), entry.get("CONTEXTS")
    if not isinstance(question, str) or not question.strip():
        raise bad("missing QUESTION text")
    if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
        raise bad("CONTEXTS must be a list of strings")
    if entry.get("final_decision") not in DECISIONS:
        raise bad(f"final_decision {entry.get('final_decision')!r} is not yes, no or maybe")
    return {
        "id": pmid,
        "question": question.strip(),
        "context": " ".join(c.strip() for c in contexts),
        "label": entry["final_decision"],
    }


def parse(spec: TaskSpec, raw_root: Path) -> dict[str, pd.DataFrame]:
    data_path = raw_root / SOURCE / "ori_pqal.json"
    truth_path = raw_root / SOURCE / "test_ground_truth.json"
    data, truth = read_json(data_path, SOURCE), read_json(truth_path, SOURCE)
    for path, obj in ((data_path, data), (truth_path, truth)):
        if not isinstance(obj, dict):
            raise DataFormatError.at(
                path, 1, "expected a JSON object keyed by PMID", redownload(SOURCE)
            )
    records = {pmid: _record(data_path, pmid, entry) for pmid, entry in data.items()}
    dev = pubmedqa_fold0_dev_pmids()
    for pmid in [*truth, *dev]:
        if pmid not in records:
            raise DataFormatError.at(
                data_path,
                None,
                f"PMID {pmid} of the test or fold-0 dev split is missing",
                redownload(SOURCE),
            )
    overlap = sorted(set(truth) & set(dev))
    if overlap:
        raise DataFormatError.at(
            truth_path,
            line_of(read_text(truth_path, SOURCE), overlap[0]),
            f"test PMID {overlap[0]} is also a fold-0 dev PMID",
            redownload(SOURCE),
        )
    splits = {"test": list(truth), "dev": dev}
    held_out = set(truth) | set(dev)
    splits["train"] = [pmid for pmid in records if pmid not in held_out]
    return {
        split: make_frame(spec.type, split, [records[p] for p in splits[split]])
        for split in ("train", "dev", "test")
    }
