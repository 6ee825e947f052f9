"""SQuAD v1.1 / v2.0 (Rajpurkar et al.), the extractive-QA format every span task is read into.

Raw layout (`resources/raw/{source}/`, the files as https://rajpurkar.github.io/SQuAD-explorer/
serves them): `train-v1.1.json` + `dev-v1.1.json`, or `train-v2.0.json` + `dev-v2.0.json`
(the task's `options["version"]`, default "2.0"). SQuAD has no public test set: the official dev
file is the test split, and the train articles whose title hashes into the last
`options["dev_share"]` (default 5%) form dev, so that no article is in two splits.

Every span task (SQuAD, BioASQ factoid) prepares to `SPAN_COLUMNS`: one row per (question,
context) instance; `question_id` groups the instances of one question (BioASQ: one per
snippet) and `gold_answers` holds what scoring compares against (all SQuAD answers; BioASQ's
synonyms).

`read_squad` reads SQuAD-format JSON (v1.1 and v2.0): `{"version", "data": [{"title",
"paragraphs": [{"context", "qas": [{"id", "question", "answers": [{"text", "answer_start"}],
"is_impossible"?}]}]}]}`. v2.0 marks unanswerable questions with `is_impossible: true` and an
empty `answers` list (their `plausible_answers` are ignored). Each question becomes one example
dict: id, title, question, context, answer_texts, answer_starts, is_impossible. Every answer
must lie at its `answer_start` in the context; a bad record is a DataFormatError naming the
file, the line of the question id and the fix.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError
from blurbflow.data.parsers.common import line_of, read_json, read_text
from blurbflow.tasks.types import SPAN_COLUMNS

FILES = {"1.1": ("train-v1.1.json", "dev-v1.1.json"), "2.0": ("train-v2.0.json", "dev-v2.0.json")}
DEV_SHARE = 0.05
FIX = "check that this is an original SQuAD-format file (v1.1 or v2.0) and fetch it again"


def _bad(path: Path, text: str, qid: str | None, problem: str, fix: str = FIX):
    line = line_of(text, f'"{qid}"') if qid else None
    return DataFormatError.at(path, line, problem, fix)


def _answers(path: Path, text: str, qid: str, context: str, qa: dict) -> tuple[list, list]:
    answers = qa.get("answers", [])
    if not isinstance(answers, list):
        raise _bad(path, text, qid, f"question {qid}: answers must be a list")
    texts, starts = [], []
    for answer in answers:
        if not isinstance(answer, dict):
            raise _bad(path, text, qid, f"question {qid}: an answer is not an object")
        value, start = answer.get("text"), answer.get("answer_start")
        if not isinstance(value, str) or not isinstance(start, int) or isinstance(start, bool):
            raise _bad(
                path, text, qid, f"question {qid}: an answer needs a text and an answer_start"
            )
        if context[start : start + len(value)] != value:
            raise _bad(
                path,
                text,
                qid,
                f"question {qid}: answer {value!r} is not at character {start} of its context "
                f"(found {context[start : start + len(value)]!r})",
            )
        texts.append(value)
        starts.append(start)
    return texts, starts


def read_squad(path: str | Path, source: str = "squad") -> list[dict]:
    """The questions of a SQuAD-format file, in file order (see the module docstring)."""
    path = Path(path)
    data = read_json(path, source)
    text = read_text(path, source)
    articles = data.get("data") if isinstance(data, dict) else None
    if not isinstance(articles, list):
        raise DataFormatError.at(path, 1, 'expected an object with a "data" list', FIX)
    examples: list[dict] = []
    seen: set[str] = set()
    for a_number, article in enumerate(articles, 1):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise DataFormatError.at(path, None, f"article #{a_number} has no paragraphs list", FIX)
        title = str(article.get("title", ""))
        for paragraph in paragraphs:
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
            if not isinstance(context, str) or not isinstance(qas, list):
                raise DataFormatError.at(
                    path,
                    None,
                    f"a paragraph of article #{a_number} ({title!r}) needs a "
                    "context string and a qas list",
                    FIX,
                )
            for qa in qas:
                qid = qa.get("id") if isinstance(qa, dict) else None
                if not isinstance(qid, str) or not qid:
                    raise DataFormatError.at(
                        path, None, f"a question of article {title!r} has no string id", FIX
                    )
                if qid in seen:
                    raise _bad(path, text, qid, f"question id {qid} occurs twice")
                seen.add(qid)
                question = qa.get("question")
                if not isinstance(question, str) or not question.strip():
                    raise _bad(path, text, qid, f"question {qid} has no question text")
                impossible = bool(qa.get("is_impossible", False))
                texts, starts = _answers(path, text, qid, context, qa)
                if impossible and texts:
                    raise _bad(path, text, qid, f"question {qid} is impossible but has answers")
                if not impossible and not texts:
                    raise _bad(path, text, qid, f"question {qid} has no answer")
                examples.append(
                    {
                        "id": qid,
                        "title": title,
                        "question": question.strip(),
                        "context": context,
                        "answer_texts": texts,
                        "answer_starts": starts,
                        "is_impossible": impossible,
                    }
                )
    return examples


def span_frame(split: str, rows: list[dict]) -> pd.DataFrame:
    """A split's frame in `SPAN_COLUMNS` order; `rows` hold every column but `split`."""
    frame = pd.DataFrame([{**row, "split": split} for row in rows], columns=list(SPAN_COLUMNS))
    if not rows:
        frame["id"] = frame["id"].astype(str)
    return frame


def in_dev(key: str, share: float) -> bool:
    """Whether `key` (an article title, a question id) falls into the held-out dev share:
    a stable hash, so the split never depends on file order or the Python hash seed."""
    digest = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16)
    return digest / 0x1_0000_0000 < share


def squad_row(example: dict) -> dict:
    """A question of `read_squad` as a prepared row: its own group, all answers gold."""
    return {
        "id": example["id"],
        "question": example["question"],
        "context": example["context"],
        "answer_texts": example["answer_texts"],
        "answer_starts": example["answer_starts"],
        "is_impossible": example["is_impossible"],
        "question_id": example["id"],
        "gold_answers": example["answer_texts"],
    }


def parse(spec, raw_root: Path) -> dict[str, pd.DataFrame]:
    (source,) = spec.sources
    version = str(spec.options.get("version", "2.0"))
    if version not in FILES:
        raise ValueError(f"task {spec.name}: SQuAD version {version!r}; use 1.1 or 2.0")
    share = float(spec.options.get("dev_share", DEV_SHARE))
    train_name, dev_name = FILES[version]
    folder = Path(raw_root) / source
    train = read_squad(folder / train_name, source)
    test = read_squad(folder / dev_name, source)
    if version == "1.1" and any(e["is_impossible"] for e in train + test):
        raise DataFormatError.at(
            folder / train_name,
            None,
            "SQuAD v1.1 files have no unanswerable questions, but this one has",
            "set the task's version option to 2.0 for SQuAD 2.0 files",
        )
    held_out = [e for e in train if in_dev(e["title"], share)]
    kept = [e for e in train if not in_dev(e["title"], share)]
    return {
        "train": span_frame("train", [squad_row(e) for e in kept]),
        "dev": span_frame("dev", [squad_row(e) for e in held_out]),
        "test": span_frame("test", [squad_row(e) for e in test]),
    }
