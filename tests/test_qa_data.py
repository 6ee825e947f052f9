"""Issue 15's new data: SQuAD and BioASQ-factoid generators read back by their parsers, their
errors on bad or missing files. (LINNAEUS from the real mirror: tests/test_biolm_tasks.py.)"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from blurbflow.data.errors import DataFormatError, ManualDownloadMissing
from blurbflow.data.generate import bioasq_factoid as factoid_generator
from blurbflow.data.generate import squad as squad_generator
from blurbflow.data.parsers import bioasq_factoid, squad
from blurbflow.data.parsers.squad import read_squad


def _spec(source: str, **options) -> SimpleNamespace:
    return SimpleNamespace(name=source, sources=(source,), options=options)


@pytest.mark.parametrize("version", ["1.1", "2.0"])
def test_generated_squad_reads_back(tmp_path, version):
    squad_generator.generate(tmp_path / "squad", seed=0, version=version)
    frames = squad.parse(_spec("squad", version=version, dev_share=0.1), tmp_path)
    sizes = {split: len(frame) for split, frame in frames.items()}
    assert sizes["train"] > 250 and sizes["dev"] > 10 and sizes["test"] > 70
    assert set(frames["train"]["id"]).isdisjoint(frames["test"]["id"])
    for frame in frames.values():
        assert list(frame.columns) == list(squad.SPAN_COLUMNS)
        for row in frame.itertuples():
            for text, start in zip(row.answer_texts, row.answer_starts, strict=True):
                assert row.context[start : start + len(text)] == text
    impossible = sum(int(f["is_impossible"].sum()) for f in frames.values())
    total = sum(sizes.values())
    if version == "1.1":
        assert impossible == 0
    else:
        assert 0.15 < impossible / total < 0.35
    # every tenth paragraph is long enough to need several 128-token windows
    assert max(len(c.split()) for c in frames["train"]["context"]) > 120


def test_squad_generator_is_deterministic(tmp_path):
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        squad_generator.generate(tmp_path / name, seed=seed)
    first = (tmp_path / "a" / "train-v2.0.json").read_bytes()
    assert first == (tmp_path / "b" / "train-v2.0.json").read_bytes()
    assert first != (tmp_path / "c" / "train-v2.0.json").read_bytes()


def test_squad_errors_name_file_line_and_fix(tmp_path):
    squad_generator.generate(tmp_path / "squad", seed=0, version="1.1")
    path = tmp_path / "squad" / "train-v1.1.json"
    data = json.loads(path.read_text())
    qa = data["data"][0]["paragraphs"][0]["qas"][0]
    qa["answers"][0]["answer_start"] += 1
    path.write_text(json.dumps(data, indent=1))
    with pytest.raises(DataFormatError) as caught:
        read_squad(path)
    message = str(caught.value)
    lines = path.read_text().split("\n")
    line = next(n for n, text in enumerate(lines, 1) if f'"{qa["id"]}"' in text)
    assert f"{path}:{line}:" in message and "is not at character" in message
    assert "original SQuAD-format file" in message
    squad_generator.generate(tmp_path / "v2", seed=0, version="2.0")
    for name in ("train", "dev"):  # SQuAD 2.0 files under v1.1 names
        (tmp_path / "v2" / f"{name}-v2.0.json").rename(tmp_path / "v2" / f"{name}-v1.1.json")
    with pytest.raises(DataFormatError, match="set the task's version option to 2.0"):
        squad.parse(_spec("v2", version="1.1"), tmp_path)


def test_generated_bioasq_factoid_reads_back(tmp_path):
    factoid_generator.generate(tmp_path / "bioasq", seed=0)
    frames = bioasq_factoid.parse(_spec("bioasq"), tmp_path)
    questions = {split: frame["question_id"].nunique() for split, frame in frames.items()}
    # 400 training factoid questions (dev: ~10% by id hash), 100 golden ones; yes/no dropped
    assert questions["train"] + questions["dev"] == 400 and 20 < questions["dev"] < 60
    assert questions["test"] == 100
    train = frames["train"]
    assert not train["is_impossible"].any()  # training keeps the snippets holding an answer
    for row in train.itertuples():
        text, start = row.answer_texts[0], row.answer_starts[0]
        assert row.context[start : start + len(text)] == text
        assert text.lower() in {s.lower() for s in row.gold_answers}
        assert row.id.startswith(f"{row.question_id}_")
    # dev and test keep every snippet: some hold no answer
    assert frames["test"]["is_impossible"].any() and (~frames["test"]["is_impossible"]).any()


def test_factoid_synonym_forms():
    assert bioasq_factoid.synonyms([["BRCA1", "breast cancer 1"]]) == ["BRCA1", "breast cancer 1"]
    assert bioasq_factoid.synonyms(["TP53", " p53 ", "TP53"]) == ["TP53", "p53"]
    assert bioasq_factoid.synonyms([["a"], ["b", "a"]]) == ["a", "b"]
    assert bioasq_factoid.synonyms(None) == []


def test_missing_bioasq_files_say_where_to_get_and_put_them(tmp_path):
    with pytest.raises(ManualDownloadMissing) as caught:
        bioasq_factoid.parse(_spec("bioasq"), tmp_path)
    message = str(caught.value)
    assert "BioASQ-training7b.zip" in message and "participants-area.bioasq.org" in message
    assert "resources/manual/bioasq" in message
    factoid_generator.generate(tmp_path / "bioasq", seed=0)
    for golden in (tmp_path / "bioasq" / "Task7BGoldenEnriched").glob("*.json"):
        golden.unlink()
    with pytest.raises(ManualDownloadMissing, match="Task7BGoldenEnriched.zip"):
        bioasq_factoid.parse(_spec("bioasq"), tmp_path)
