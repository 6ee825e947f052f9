"""Issue 15's new data: SQuAD and BioASQ-factoid generators read back by their parsers, their
errors on bad or missing files, and LINNAEUS fetched from the real mirror (over loopback HTTP,
with its pinned sha256) and parsed by the CoNLL parser."""

from __future__ import annotations

import functools
import json
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from blurbflow.data.errors import DataFormatError, ManualDownloadMissing
from blurbflow.data.generate import bioasq_factoid as factoid_generator
from blurbflow.data.generate import squad as squad_generator
from blurbflow.data.parsers import bioasq_factoid, squad
from blurbflow.qa import read_squad

from workflow_helpers import REPO

MIRROR = REPO.parent / "shared" / "blurb-raw"


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


# --- LINNAEUS from the real mirror -------------------------------------------------------------

# blurbflow.data.fetch.tree_digest of each file (what a registry entry pins)
LINNAEUS_DIGESTS = {
    "train.tsv": "1cfdfab2bc3bf27b0de898b8a7048242cb8e9424bc3a534d1bcb11f764700cbf",
    "devel.tsv": "8ab6a1ac034d47f46f422ed271aeee46d15a8fe9fdc7cd4db449da866affb21d",
    "test.tsv": "691a973b06a5b1f90851698861e66eed904bfbacd97932c45b21395ec3ace844",
}
# (sentences, entity mentions) per split of Crichton et al.'s linnaeus-IOB
LINNAEUS_COUNTS = {"train": (11935, 2119), "dev": (4078, 711), "test": (7142, 1433)}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.mark.mirror
@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"{MIRROR} is absent: no real BLURB files here")
def test_linnaeus_from_the_mirror(tmp_path, monkeypatch, capsys):
    from blurbflow.data.fetch import fetch_source
    from blurbflow.data.parsers import conll
    from blurbflow.tasks.builtin import crichton
    from blurbflow.tasks.sources import SOURCES

    source = crichton("linnaeus", "linnaeus-IOB", *LINNAEUS_DIGESTS.values())
    monkeypatch.setitem(SOURCES, "linnaeus", source)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(MIRROR)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        fetch_source("linnaeus", tmp_path / "linnaeus", mirror=url)
    finally:
        server.shutdown()
    frames = conll.parse(SimpleNamespace(sources=("linnaeus",), type="ner"), tmp_path)
    counts = {
        split: (len(frame), sum(list(tags).count("B") for tags in frame["tags"]))
        for split, frame in frames.items()
    }
    with capsys.disabled():
        print(f"\nLINNAEUS (sentences, entity mentions) per split: {counts}")
    assert counts == LINNAEUS_COUNTS
    assert {t for tags in frames["train"]["tags"] for t in tags} == {"B", "I", "O"}
