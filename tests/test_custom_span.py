"""A user's own extractive-QA task from the config: `type: span, format: squad` reads SQuAD
v1.1/v2.0 JSON files into the prepared span columns, is tokenized into context windows like
the built-in SQuAD task, and wrong entries or files are named."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from blurbflow.data.errors import DataFormatError
from blurbflow.data.generate import generate_source
from blurbflow.data.parsers.squad import read_squad
from blurbflow.data.prepare import prepare_task
from blurbflow.models.build import corpus_texts, train_tokenizer
from blurbflow.options import InputOptions
from blurbflow.tasks import get_task, register_tasks
from blurbflow.tasks.types import SPAN_COLUMNS
from blurbflow.train.encode import encode_task, load_encoded
from blurbflow.util.errors import ConfigError


@pytest.fixture
def own_qa(tmp_path):
    """Generated SQuAD 2.0 files as a user's corpus: official dev as dev and test."""
    generate_source("squad-v2.0", tmp_path / "files")
    train, dev = (str(tmp_path / f"files/{name}-v2.0.json") for name in ("train", "dev"))
    config = {
        "tasks": {
            "myqa": {
                "type": "span",
                "format": "squad",
                "files": {"train": train, "dev": dev, "test": dev},
            }
        }
    }
    return config  # conftest forgets the registered tasks after the test


def test_squad_files_prepare_and_tokenize_as_a_span_task(own_qa, tmp_path):
    register_tasks(own_qa)
    spec = get_task("myqa")
    assert (spec.type, spec.metric, spec.labels, spec.builtin) == ("span", "squad_f1", (), False)
    stats = prepare_task("myqa", tmp_path / "unused", tmp_path / "data")
    files = own_qa["tasks"]["myqa"]["files"]
    for split in ("train", "dev", "test"):
        frame = pd.read_parquet(tmp_path / f"data/{split}.parquet")
        assert tuple(frame.columns) == SPAN_COLUMNS
        questions = read_squad(files[split])
        assert len(frame) == len(questions) == stats["splits"][split]["instances"]
        assert frame["is_impossible"].sum() == sum(q["is_impossible"] for q in questions) > 0
    assert set(stats["source_files"]) == set(files.values())
    texts = list(corpus_texts([tmp_path / "data/train.parquet"]))
    tokenizer = train_tokenizer(texts, 400)
    encode_task(
        spec, tmp_path / "data", tokenizer, InputOptions(max_length=128), tmp_path / "encoded"
    )
    train = load_encoded(tmp_path / "encoded", "train")
    assert set(train["id"]) == set(pd.read_parquet(tmp_path / "data/train.parquet")["id"])
    assert len(train["input_ids"]) >= stats["splits"]["train"]["instances"]
    assert max(len(ids) for ids in train["input_ids"]) <= 128


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"format": "jsonl"}, r"tasks\.myqa\.format: jsonl does not hold span data; use squad"),
        ({"type": "cls", "labels": ["a", "b"]}, r"tasks\.myqa\.format: squad does not hold cls"),
        ({"metric": "accuracy"}, r"tasks\.myqa\.metric: 'accuracy' does not apply to span"),
    ],
)
def test_wrong_entries_name_the_key(own_qa, edit, message):
    own_qa["tasks"]["myqa"].update(edit)
    with pytest.raises(ConfigError, match=message):
        register_tasks(own_qa)


def test_a_broken_squad_file_names_the_file(own_qa, tmp_path):
    register_tasks(own_qa)
    dev = Path(own_qa["tasks"]["myqa"]["files"]["dev"])
    dev.write_text(json.dumps({"version": "v2.0", "articles": []}))
    with pytest.raises(DataFormatError, match=rf"{dev}.*\"data\" list"):
        prepare_task("myqa", tmp_path / "unused", tmp_path / "data")
    assert not (tmp_path / "data").exists()
