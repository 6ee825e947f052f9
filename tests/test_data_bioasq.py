"""BioASQ 7b: generator -> prepare round trip, BLURB's rules (yes/no questions only, snippets
joined by spaces, exact_answer lower-cased, ids from the index lists) on tiny hand-written files,
malformed inputs, and a missing manual download (ManualDownloadMissing with a helpful message)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression

from blurbflow.data.errors import DataFormatError, ManualDownloadMissing
from blurbflow.data.generate.bioasq import SPLIT_SIZES
from blurbflow.data.parsers import COLUMNS, parse_task
from blurbflow.tasks.sources import SOURCES

from data_helpers import generate_and_prepare, prepare_fails
from data_helpers import write as _write

SPLITS = ("train", "dev", "test")
INDEX = Path("blurb-index/data_generation/indexing/BioASQ")
TRAIN = Path("bioasq/BioASQ-training7b/trainining7b.json")
GOLDEN = Path("bioasq/Task7BGoldenEnriched")


def _questions(path: Path) -> list[dict]:
    return json.loads(path.read_text())["questions"]


# --- generated corpus ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, dict, dict[str, pd.DataFrame]]:
    return generate_and_prepare(tmp_path_factory, "bioasq")


def test_round_trip_counts_and_schema(generated):
    root, stats, frames = generated
    for split in SPLITS:
        frame = frames[split]
        ids = (root / INDEX / f"{split}_id.tsv").read_text().split(",")
        assert list(frame["id"]) == ids
        assert stats["splits"][split]["instances"] == len(frame) == SPLIT_SIZES[split]
        assert list(frame.columns) == list(COLUMNS["qa"])
        assert frame["id"].is_unique and set(frame["split"]) == {split}
        assert set(frame["label"]) == {"yes", "no"}
        assert stats["splits"][split]["label_counts"] == frame["label"].value_counts().to_dict()
        assert (frame["context"].str.len() > 0).all() and frame["question"].str.endswith("?").all()


def test_raw_files_hold_other_question_types(generated):
    root, _, frames = generated
    train = _questions(root / TRAIN)
    golden = [q for p in sorted((root / GOLDEN).glob("*.json")) for q in _questions(p)]
    assert len(list((root / GOLDEN).glob("7B*_golden.json"))) == 5
    for questions, used in ((train, 670 + 75), (golden, 140)):
        kinds = {q["type"] for q in questions}
        assert {"yesno", "factoid", "list", "summary"} <= kinds
        assert sum(q["type"] == "yesno" for q in questions) == used
    assert any(q.get("exact_answer") == "Yes" for q in train)  # case normalised by the parser
    by_id = {q["id"]: q for q in train}
    row = frames["train"].iloc[0]
    assert row["context"] == " ".join(s["text"] for s in by_id[row["id"]]["snippets"])


def test_signal(generated):
    _, _, frames = generated
    vectorizer = CountVectorizer(ngram_range=(1, 2))
    model = LogisticRegression(max_iter=1000).fit(
        vectorizer.fit_transform(frames["train"]["context"]), frames["train"]["label"]
    )
    for split in ("dev", "test"):
        accuracy = (
            model.predict(vectorizer.transform(frames[split]["context"])) == frames[split]["label"]
        ).mean()
        majority = (frames[split]["label"] == frames["train"]["label"].mode()[0]).mean()
        assert accuracy > majority + 0.2, (split, accuracy, majority)


# --- rules on hand-written files -----------------------------------------------------------


def _q(qid: str, kind: str = "yesno", answer="yes", snippets=("A is B.", "C.")) -> dict:
    entry = {
        "id": qid,
        "type": kind,
        "body": f" Question {qid}? ",
        "snippets": [{"text": t, "document": "x"} for t in snippets],
    }
    if answer is not None:
        entry["exact_answer"] = answer
    return entry


def _json(questions: list[dict]) -> str:
    return json.dumps({"questions": questions}, indent=2)


@pytest.fixture
def tiny_root(tmp_path) -> Path:
    root = tmp_path / "raw"
    _write(
        root / TRAIN,
        _json(
            [
                _q("a1", answer="Yes"),
                _q("f1", "factoid", [["x"]]),
                _q("a2", answer=" no "),
                _q("s1", "summary", None),
                _q("a3", answer="yes", snippets=("One.", "Two", "Three.")),
            ]
        ),
    )
    _write(root / GOLDEN / "7B1_golden.json", _json([_q("t1", answer="no"), _q("l1", "list")]))
    _write(root / GOLDEN / "7B2_golden.json", _json([_q("t2", answer="NO", snippets=())]))
    _write(root / INDEX / "train_id.tsv", "a3,a1")
    _write(root / INDEX / "dev_id.tsv", "a2")
    _write(root / INDEX / "test_id.tsv", "t2,t1")
    return root


def test_rules_on_hand_written_files(tiny_root):
    frames = parse_task("bioasq", tiny_root)
    train = frames["train"]
    assert list(train["id"]) == ["a3", "a1"]  # the index order
    assert list(train["context"]) == ["One. Two Three.", "A is B. C."]
    assert list(train["question"]) == ["Question a3?", "Question a1?"]
    assert list(train["label"]) == ["yes", "yes"]
    assert list(frames["dev"]["label"]) == ["no"]
    test = frames["test"]
    assert list(test["id"]) == ["t2", "t1"] and list(test["label"]) == ["no", "no"]
    assert list(test["context"]) == ["", "A is B. C."]


# --- malformed inputs and missing manual files ----------------------------------------------


def _error(root: Path, out: Path, kind=DataFormatError):
    return prepare_fails("bioasq", root, out, kind=kind)


def test_missing_training_file(tiny_root, tmp_path):
    (tiny_root / TRAIN).unlink()
    error = _error(tiny_root, tmp_path / "out", ManualDownloadMissing)
    message = str(error)
    assert isinstance(error, DataFormatError)
    assert error.path == str(tiny_root / TRAIN)
    assert str(tiny_root / TRAIN) in message  # which file
    assert SOURCES["bioasq"].manual in message  # where to get it (registration URL)
    assert "http://participants-area.bioasq.org/datasets/" in message
    assert "BioASQ-training7b.zip" in message
    assert f"looked in {tiny_root / 'bioasq'}" in message  # where to put it
    assert "data.bioasq_dir" in message


def test_missing_golden_files(tiny_root, tmp_path):
    for path in (tiny_root / GOLDEN).glob("*.json"):
        path.unlink()
    message = str(_error(tiny_root, tmp_path / "out", ManualDownloadMissing))
    assert str(tiny_root / GOLDEN) in message and "Task7BGoldenEnriched.zip" in message
    assert SOURCES["bioasq"].manual in message


def test_listed_question_is_not_yesno(tiny_root, tmp_path):
    _write(tiny_root / INDEX / "train_id.tsv", "a1,f1")
    message = str(_error(tiny_root, tmp_path / "out"))
    assert "BioASQ/train_id.tsv" in message and "f1" in message and "yes/no" in message


def test_listed_question_missing(tiny_root, tmp_path):
    _write(tiny_root / INDEX / "test_id.tsv", "t1,a1")  # a1 is a training question
    message = str(_error(tiny_root, tmp_path / "out"))
    assert "BioASQ/test_id.tsv" in message and "question a1" in message


def test_bad_exact_answer_points_at_question(tiny_root, tmp_path):
    text = _json([_q("a1"), _q("a2", answer="maybe"), _q("a3")])
    _write(tiny_root / TRAIN, text)
    error = _error(tiny_root, tmp_path / "out")
    line = text.split("\n").index('      "id": "a2",') + 1
    assert error.line == line and f"trainining7b.json:{line}:" in str(error)
    assert "'maybe'" in str(error)


def test_invalid_json(tiny_root, tmp_path):
    _write(tiny_root / GOLDEN / "7B2_golden.json", '{"questions": [\n  {"id": "t2",,}\n]}')
    error = _error(tiny_root, tmp_path / "out")
    assert error.line == 2 and "7B2_golden.json:2:" in str(error) and "invalid JSON" in str(error)


def test_not_a_questions_object(tiny_root, tmp_path):
    _write(tiny_root / TRAIN, "[]")
    assert 'a "questions" list' in str(_error(tiny_root, tmp_path / "out"))
