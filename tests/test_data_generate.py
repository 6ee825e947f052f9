"""Synthetic sources -> prepare round trips: exact sizes, schema, determinism and a learnable signal
(a cheap rule or bag-of-words model beats the majority baseline on dev, so the demo can too)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import MultiLabelBinarizer

from blurbflow.data.generate import GENERATORS, check_generated, generate_source
from blurbflow.data.generate.ner import FOLDERS, UNTYPED
from blurbflow.data.parsers import COLUMNS
from blurbflow.data.prepare import prepare_task
from blurbflow.tasks import get_task
from blurbflow.tasks.registry import HOC_HALLMARKS, TASKS
from blurbflow.tasks.sources import SOURCES
from blurbflow.tasks.spec import Source, TaskSpec

NER_TASKS = (
    "bc5chem",
    "bc5disease",
    "ncbidisease",
    "bc2gm",
    "jnlpba",
    "linnaeus",
    "bc4chemd",
    "species800",
)
EXPECTED = {
    **{task: (1000, 250, 250) for task in NER_TASKS},
    "gad": (4261, 535, 534),
    "biosses": (64, 16, 20),
    "hoc": (1295, 186, 371),
    "pubmedqa": (450, 50, 500),
}
SPLITS = ("train", "dev", "test")


@pytest.fixture(scope="module")
def raw_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("raw")
    for source in GENERATORS:
        generate_source(source, root / source, seed=0)
    return root


@pytest.fixture(scope="module")
def prepared(raw_root, tmp_path_factory) -> dict[str, tuple[dict, dict[str, pd.DataFrame]]]:
    out = tmp_path_factory.mktemp("prepared")
    result = {}
    for task in EXPECTED:
        stats = prepare_task(task, raw_root, out / task)
        frames = {s: pd.read_parquet(out / task / f"{s}.parquet") for s in SPLITS}
        assert json.loads((out / task / "stats.json").read_text()) == stats
        result[task] = (stats, frames)
    return result


def test_every_source_marked_generated_has_a_generator():
    """Sources say whether synthetic files exist (`Source.generated`): a built-in task without
    a generator is still one registry entry, and no generator lies unused."""
    generated = {name for name, source in SOURCES.items() if source.generated}
    assert generated == set(GENERATORS)
    assert {"linnaeus", "bc4chemd", "biobert-datasets"} <= generated


@pytest.fixture
def ungenerated_task(monkeypatch):
    """A built-in task whose source has no synthetic data (as a future entry may)."""
    from blurbflow.tasks import registry

    source = Source(name="realonly", urls=("https://example.org/x.tsv",), generated=False)
    spec = TaskSpec(name="realonly-ner", type="ner", labels=("B", "I", "O"), raw=(source,))
    monkeypatch.setitem(registry.TASKS, spec.name, spec)
    monkeypatch.setattr(registry, "ENTRIES", [*registry.ENTRIES, spec])
    return spec


def test_generating_a_source_without_a_generator_names_the_task(ungenerated_task, tmp_path):
    with pytest.raises(KeyError) as raised:
        generate_source("realonly", tmp_path / "realonly")
    message = str(raised.value)
    assert "task realonly-ner" in message and "'realonly'" in message
    assert "data.source: download" in message and "mirror" in message
    assert not (tmp_path / "realonly").exists()
    with pytest.raises(ValueError, match="task realonly-ner: .*data.source: download"):
        check_generated(["bc5chem", "realonly-ner"])
    check_generated(["bc5chem", "linnaeus", "bc4chemd", "species800"])  # all generated


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_round_trip_counts_and_schema(prepared, task):
    stats, frames = prepared[task]
    spec = TASKS[task]
    assert stats["task"] == task and stats["type"] == spec.type
    for split, expected in zip(SPLITS, EXPECTED[task], strict=True):
        frame = frames[split]
        assert stats["splits"][split]["instances"] == len(frame) == expected
        assert list(frame.columns) == list(COLUMNS[spec.type])
        assert set(frame["split"]) == {split}
        assert frame["id"].map(type).eq(str).all() and frame["id"].is_unique


@pytest.mark.parametrize("task", NER_TASKS)
def test_ner_frames(prepared, raw_root, task):
    stats, frames = prepared[task]
    for split in SPLITS:
        frame = frames[split]
        lengths = frame["tokens"].map(len)
        assert (lengths == frame["tags"].map(len)).all()
        assert lengths.between(10, 25).all()
        tags = Counter(tag for row in frame["tags"] for tag in row)
        assert set(tags) == {"B", "I", "O"}
        assert stats["splits"][split]["entity_mentions"] == tags["B"] > 0
        assert stats["splits"][split]["tokens"] == lengths.sum()
        assert not any("-DOCSTART-" in token for row in frame["tokens"] for token in row)
    # the raw files carry typed tags (and JNLPBA its two kinds of -DOCSTART- lines), but
    # BioBERT's (Species-800, in its archive's folder) bare B/I tags
    (source,) = get_task(task).sources
    devel = (raw_root / source / FOLDERS.get(task, "") / "devel.tsv").read_text()
    typed = task not in UNTYPED
    assert ("\tB-" in devel and "\tI-" in devel) == typed
    assert ("\tB\n" in devel and "\tI\n" in devel) != typed
    if task == "jnlpba":
        train = (raw_root / task / "train.tsv").read_text().splitlines()
        assert any(line.startswith("-DOCSTART- ") for line in train)
        assert "-DOCSTART-\tO" in devel.splitlines()


def test_bc5cdr_sources_share_their_text(raw_root):
    def tokens(source):
        return [
            line.split("\t")[0]
            for line in (raw_root / source / "test.tsv").read_text().splitlines()
        ]

    assert tokens("bc5chem") == tokens("bc5disease")


def test_gad_files_and_frames(prepared, raw_root):
    fold1 = raw_root / "gad" / "GAD" / "1"
    assert len((fold1 / "train.tsv").read_text().splitlines()) == 4261 + 535
    test_lines = (fold1 / "test.tsv").read_text().splitlines()
    assert test_lines[0] == "index\tsentence\tlabel" and len(test_lines) == 1 + 534
    assert sorted(int(p.name) for p in (raw_root / "gad" / "GAD").iterdir()) == list(range(1, 11))
    _, frames = prepared["gad"]
    for frame in frames.values():
        assert set(frame["label"]) == {"0", "1"}
        assert frame["text"].str.contains("@GENE$", regex=False).all()
        assert frame["text"].str.contains("@DISEASE$", regex=False).all()
        assert frame[["original_text", "e1_start", "e2_end"]].isna().all().all()


def test_biosses_frames(prepared):
    _, frames = prepared["biosses"]
    ids = sorted(int(i) for frame in frames.values() for i in frame["id"])
    assert ids == list(range(1, 101))
    scores = pd.concat(frames.values())["score"]
    assert scores.between(0, 4).all() and scores.nunique() > 5


def test_hoc_frames(prepared):
    stats, frames = prepared["hoc"]
    for split, frame in frames.items():
        assert frame["sentences"].map(len).between(3, 6).all()
        for labels, per_sentence in zip(frame["labels"], frame["sentence_labels"], strict=True):
            assert set(labels) <= set(HOC_HALLMARKS)
            assert set(labels) == {name for names in per_sentence for name in names}
        assert (frame["labels"].map(len) == 0).any()  # abstracts without any hallmark exist
        assert stats["splits"][split]["sentences"] == frame["sentences"].map(len).sum()
    assert set(stats["splits"]["train"]["label_counts"]) == set(HOC_HALLMARKS)


def test_pubmedqa_frames(prepared, raw_root):
    from blurbflow.data.parsers.common import pubmedqa_fold0_dev_pmids

    _, frames = prepared["pubmedqa"]
    truth = json.loads((raw_root / "pubmedqa" / "test_ground_truth.json").read_text())
    assert set(frames["dev"]["id"]) == set(pubmedqa_fold0_dev_pmids())
    assert list(frames["test"]["id"]) == list(truth)
    assert list(frames["test"]["label"]) == list(truth.values())
    assert set(pd.concat(frames.values())["label"]) == {"yes", "no", "maybe"}


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("source", sorted(GENERATORS))
def test_generation_is_deterministic(raw_root, tmp_path, source):
    generate_source(source, tmp_path / "again", seed=0)
    assert _tree(tmp_path / "again") == _tree(raw_root / source)
    if source != "blurb-index":  # the index lists depend only on the seed-free PMIDs
        generate_source(source, tmp_path / "other", seed=1)
        assert _tree(tmp_path / "other") != _tree(raw_root / source)


def test_unknown_source_is_rejected(tmp_path):
    with pytest.raises(KeyError, match="no-such-source"):
        generate_source("no-such-source", tmp_path)


# --- learnable signal: simple models beat the majority baseline on dev ---------------------


def _spans(tags: list[str]) -> set[tuple[int, int]]:
    spans, start = set(), None
    for i, tag in enumerate([*tags, "O"]):
        if start is not None and tag != "I":
            spans.add((start, i))
            start = None
        if tag == "B" or (tag == "I" and start is None):
            start = i
    return spans


def _shape(token: str) -> str:
    """Word shape: KRX3 -> A0, hepatoma -> a (entity names follow a few shapes)."""
    classes = [
        "A" if c.isupper() else "a" if c.islower() else "0" if c.isdigit() else c for c in token
    ]
    return "".join(c for i, c in enumerate(classes) if i == 0 or c != classes[i - 1])


FEATURES = (lambda t: t, lambda t: t[-4:], _shape)  # backed off in this order


@pytest.mark.parametrize("task", NER_TASKS)
def test_ner_signal(prepared, task):
    """Tag lookup by word, else suffix, else shape, learned on train, finds most dev entities
    (the majority baseline, all O, has F1 0)."""
    _, frames = prepared[task]
    tables: list[dict[str, Counter]] = [{} for _ in FEATURES]
    for tokens, tags in zip(frames["train"]["tokens"], frames["train"]["tags"], strict=True):
        for token, tag in zip(tokens, tags, strict=True):
            for table, feature in zip(tables, FEATURES, strict=True):
                table.setdefault(feature(token), Counter())[tag] += 1

    def guess_tag(token: str) -> str:
        for table, feature in zip(tables, FEATURES, strict=True):
            if feature(token) in table:
                return table[feature(token)].most_common(1)[0][0]
        return "O"

    gold = pred = hit = 0
    for tokens, tags in zip(frames["dev"]["tokens"], frames["dev"]["tags"], strict=True):
        guess = [guess_tag(t) for t in tokens]
        true_spans, guess_spans = _spans(list(tags)), _spans(guess)
        gold, pred, hit = (
            gold + len(true_spans),
            pred + len(guess_spans),
            hit + len(true_spans & guess_spans),
        )
    f1 = 2 * hit / (gold + pred)
    assert f1 > 0.6, f1


def _bag_of_words_accuracy(train: pd.DataFrame, dev: pd.DataFrame, column: str) -> float:
    vectorizer = CountVectorizer(ngram_range=(1, 2))
    model = LogisticRegression(max_iter=1000).fit(
        vectorizer.fit_transform(train[column]), train["label"]
    )
    return float((model.predict(vectorizer.transform(dev[column])) == dev["label"]).mean())


def _majority(train: pd.DataFrame, dev: pd.DataFrame) -> float:
    return float((dev["label"] == train["label"].mode()[0]).mean())


def test_gad_signal(prepared):
    _, frames = prepared["gad"]
    accuracy = _bag_of_words_accuracy(frames["train"], frames["dev"], "text")
    assert accuracy > _majority(frames["train"], frames["dev"]) + 0.25, accuracy


@pytest.mark.slow  # runs snakemake or trains for long; `make test-fast` leaves it out
def test_pubmedqa_signal(prepared):
    _, frames = prepared["pubmedqa"]
    for split in ("dev", "test"):
        accuracy = _bag_of_words_accuracy(frames["train"], frames[split], "context")
        assert accuracy > _majority(frames["train"], frames[split]) + 0.15, (split, accuracy)


def test_biosses_signal(prepared):
    """Word overlap alone correlates with the gold score (chance: Pearson 0)."""
    _, frames = prepared["biosses"]
    for split in ("train", "dev"):
        frame = frames[split]
        overlap = [
            len(set(a.split()) & set(b.split())) / len(set(a.split()) | set(b.split()))
            for a, b in zip(frame["text_a"], frame["text_b"], strict=True)
        ]
        assert np.corrcoef(overlap, frame["score"])[0, 1] > 0.7


@pytest.mark.slow  # runs snakemake or trains for long; `make test-fast` leaves it out
def test_hoc_signal(prepared):
    _, frames = prepared["hoc"]
    binarizer = MultiLabelBinarizer(classes=list(HOC_HALLMARKS))
    y_train = binarizer.fit_transform(frames["train"]["labels"])
    y_dev = binarizer.transform(frames["dev"]["labels"])
    vectorizer = CountVectorizer(ngram_range=(1, 2))
    model = OneVsRestClassifier(LogisticRegression(max_iter=1000)).fit(
        vectorizer.fit_transform(frames["train"]["text"]), y_train
    )
    f1 = f1_score(
        y_dev, model.predict(vectorizer.transform(frames["dev"]["text"])), average="micro"
    )
    most_common = np.zeros_like(y_dev)
    most_common[:, y_train.sum(axis=0).argmax()] = 1  # majority: the commonest hallmark always
    baseline = f1_score(y_dev, most_common, average="micro")
    assert f1 > 0.8 and f1 > baseline + 0.4, (f1, baseline)
