"""BioASQ 7b factoid questions as extractive QA (BioBERT's and BioM-Transformers' setting),
from the same two manual zips as BioASQ yes/no (a free registration; see `bioasq.py`).

Raw layout (the zips extracted into the source folder): `BioASQ-training7b/trainining7b.json`
(sic) for train and dev, `Task7BGoldenEnriched/*.json` (7B1..7B5) for test. Only `factoid`
questions count; `exact_answer` is a list of synonyms (`["a", "b"]` or `[["a", "b"]]`).

Each (question, snippet) pair is an instance with id `{question id}_{snippet number:03d}`
(SQuAD format). Training keeps the snippets that contain a synonym (first occurrence, case-
insensitive), each with that answer span; dev and test keep every snippet, since a question is
scored once over all of them (`blurbflow.qa.factoid_answers`, then strict / lenient accuracy
and MRR against the synonyms). Dev is the training questions whose id hashes into
`options["dev_share"]` (default 10%): the BioASQ releases have no dev set.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError
from blurbflow.data.parsers.bioasq import FIX, TEST_DIR, TRAIN_FILE, missing
from blurbflow.data.parsers.common import line_of, read_json, read_text
from blurbflow.data.parsers.squad import in_dev, span_frame

DEV_SHARE = 0.10


def synonyms(value) -> list[str]:
    """The gold synonyms of a factoid `exact_answer`, flattened, stripped, in order, once."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        return []
    out: list[str] = []
    for item in items:
        for text in [item] if isinstance(item, str) else item if isinstance(item, list) else []:
            if isinstance(text, str) and text.strip() and text.strip() not in out:
                out.append(text.strip())
    return out


def read_factoid(path: Path, source: str) -> list[dict]:
    """The factoid questions of one BioASQ JSON file: id, question, snippets, synonyms."""
    data = read_json(path, source)
    entries = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise DataFormatError.at(path, 1, 'expected an object with a "questions" list', FIX)
    out = []
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or entry.get("type") != "factoid":
            continue
        qid = entry.get("id")
        if not isinstance(qid, str) or not qid:
            raise DataFormatError.at(path, None, f"question #{number} has no string id", FIX)
        line = line_of(read_text(path, source), f'"{qid}"')
        body, snippets = entry.get("body"), entry.get("snippets", [])
        if not isinstance(body, str) or not body.strip():
            raise DataFormatError.at(path, line, f"question {qid}: missing body text", FIX)
        if not isinstance(snippets, list) or not all(
            isinstance(s, dict) and isinstance(s.get("text"), str) for s in snippets
        ):
            raise DataFormatError.at(
                path, line, f"question {qid}: snippets must be objects with a text", FIX
            )
        gold = synonyms(entry.get("exact_answer"))
        if not gold:
            raise DataFormatError.at(
                path,
                line,
                f"question {qid}: exact_answer {entry.get('exact_answer')!r} holds no answer text",
                FIX,
            )
        out.append(
            {
                "id": qid,
                "question": body.strip(),
                "gold": gold,
                "snippets": [s["text"].strip() for s in snippets],
            }
        )
    return out


def _find(context: str, gold: list[str]) -> tuple[str, int] | None:
    lowered = context.lower()
    found = [(lowered.find(s.lower()), s) for s in gold]
    found = [(start, s) for start, s in found if start >= 0]
    if not found:
        return None
    start, text = min(found, key=lambda pair: (pair[0], -len(pair[1])))
    return context[start : start + len(text)], start


def instances(question: dict, answerable_only: bool) -> list[dict]:
    rows = []
    for k, context in enumerate(question["snippets"]):
        hit = _find(context, question["gold"])
        if hit is None and answerable_only:
            continue
        rows.append(
            {
                "id": f"{question['id']}_{k:03d}",
                "question": question["question"],
                "context": context,
                "answer_texts": [] if hit is None else [hit[0]],
                "answer_starts": [] if hit is None else [hit[1]],
                "is_impossible": hit is None,
                "question_id": question["id"],
                "gold_answers": question["gold"],
            }
        )
    return rows


def parse(spec, raw_root: Path) -> dict[str, pd.DataFrame]:
    source = spec.sources[0]
    folder = Path(raw_root) / source
    train_path = folder / TRAIN_FILE
    if not train_path.is_file():
        raise missing(train_path, folder, "the training file", "BioASQ-training7b.zip")
    test_files = sorted((folder / TEST_DIR).glob("*.json")) if (folder / TEST_DIR).is_dir() else []
    if not test_files:
        raise missing(
            folder / TEST_DIR, folder, "the golden test files (*.json)", "Task7BGoldenEnriched.zip"
        )
    share = float(spec.options.get("dev_share", DEV_SHARE))
    train_questions = read_factoid(train_path, source)
    test_questions: dict[str, dict] = {}
    for path in test_files:
        for question in read_factoid(path, source):
            test_questions.setdefault(question["id"], question)
    rows = {"train": [], "dev": [], "test": []}
    for question in train_questions:
        dev = in_dev(question["id"], share)
        rows["dev" if dev else "train"] += instances(question, answerable_only=not dev)
    for question in test_questions.values():
        rows["test"] += instances(question, answerable_only=False)
    return {split: span_frame(split, split_rows) for split, split_rows in rows.items()}
