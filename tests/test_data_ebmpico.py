"""EBM-NLP PICO: generator -> prepare round trip, BLURB's rules (Outcome > Intervention >
Participant, a sentence ends after each "." token, test from test/gold) on tiny hand-written
files, and malformed inputs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from blurbflow.data.generate.ebmnlp import SPLIT_SIZES
from blurbflow.data.parsers import COLUMNS, parse_task
from blurbflow.data.parsers.ebmpico import document_tags, sentences
from blurbflow.data.prepare import prepare_task
from blurbflow.tasks.registry import PICO_LABELS

from data_helpers import generate_and_prepare, prepare_fails
from data_helpers import write as _write

SPLITS = ("train", "dev", "test")
INDEX = Path("blurb-index/data_generation/indexing/ebmnlp")
BASE = Path("ebmnlp/ebm_nlp_2_00")
ANN = BASE / "annotations/aggregated/starting_spans"
ELEMENTS = ("participants", "interventions", "outcomes")
TAGS = ("I-INT", "I-OUT", "I-PAR")


# --- generated corpus ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, dict, dict[str, pd.DataFrame]]:
    return generate_and_prepare(tmp_path_factory, "ebmpico")


def test_round_trip_counts_and_schema(generated):
    root, stats, frames = generated
    for split in SPLITS:
        frame = frames[split]
        pmids = (root / INDEX / f"{split}_pmid.tsv").read_text().split(",")
        assert len(pmids) == SPLIT_SIZES[split]
        folder = "test/gold" if split == "test" else "train"
        for element in ELEMENTS:
            assert all(
                (root / ANN / element / folder / f"{p}.AGGREGATED.ann").is_file() for p in pmids
            )
        assert set(frame["id"].str.split("-").str[0]) == set(pmids)
        assert list(frame.columns) == list(COLUMNS["pico"])
        assert frame["id"].is_unique and set(frame["split"]) == {split}
        lengths = frame["tokens"].map(len)
        assert (lengths == frame["tags"].map(len)).all() and (lengths > 0).all()
        # every sentence ends with its only "." token, except a document's unfinished last one
        assert all(list(tokens).count(".") <= 1 for tokens in frame["tokens"])
        tokens = sum(
            len((root / BASE / "documents" / f"{p}.tokens").read_text().split("\n")) - 1
            for p in pmids
        )
        split_stats = stats["splits"][split]
        assert split_stats["instances"] == len(frame)
        assert split_stats["tokens"] == lengths.sum() == tokens
        counts = Counter(tag for tags in frame["tags"] for tag in tags)
        assert set(counts) == set(PICO_LABELS)
        assert split_stats["pico_words"] == {tag: counts[tag] for tag in TAGS}
        assert split_stats["labelled_words"] == sum(counts[tag] for tag in TAGS)
    unfinished = [t for t in frames["train"]["tokens"] if t[-1] != "."]
    assert unfinished  # documents whose last sentence has no final "."


def test_generated_spans_overlap(generated):
    """Some tokens carry two elements, so the precedence rule is exercised."""
    root, _, _ = generated
    overlaps = 0
    for pmid in (root / INDEX / "train_pmid.tsv").read_text().split(",")[:50]:
        flags = [
            (root / ANN / e / "train" / f"{pmid}.AGGREGATED.ann").read_text().split()
            for e in ELEMENTS
        ]
        overlaps += sum(1 for token in zip(*flags, strict=True) if token.count("1") > 1)
    assert overlaps > 0


def test_signal(generated):
    """Tag lookup by word, learned on train, gives a word-level macro F1 over PAR/INT/OUT far
    above the all-O baseline (0)."""
    _, _, frames = generated
    table: dict[str, Counter] = {}
    for tokens, tags in zip(frames["train"]["tokens"], frames["train"]["tags"], strict=True):
        for token, tag in zip(tokens, tags, strict=True):
            table.setdefault(token.lower(), Counter())[tag] += 1
    hits, gold, pred = Counter(), Counter(), Counter()
    for tokens, tags in zip(frames["dev"]["tokens"], frames["dev"]["tags"], strict=True):
        for token, tag in zip(tokens, tags, strict=True):
            guess = table[token.lower()].most_common(1)[0][0] if token.lower() in table else "O"
            gold[tag] += 1
            pred[guess] += 1
            hits[tag] += tag == guess
    f1s = [2 * hits[t] / (gold[t] + pred[t]) for t in TAGS]
    assert sum(f1s) / len(f1s) > 0.6, f1s


# --- rules on hand-written files -----------------------------------------------------------


def _doc(root: Path, pmid: str, folder: str, tokens: list[str], **flags: str) -> None:
    _write(root / BASE / "documents" / f"{pmid}.tokens", "\n".join(tokens) + "\n")
    for element in ELEMENTS:
        marks = flags.get(element, "0" * len(tokens))
        _write(root / ANN / element / folder / f"{pmid}.AGGREGATED.ann", "\n".join(marks) + "\n")


@pytest.fixture
def tiny_root(tmp_path) -> Path:
    root = tmp_path / "raw"
    #                 0           1       2       3      4       5        6      7     8    9
    tokens = ["Patients", "given", "aspirin", "had", "less", "pain", ".", "Pain", "fell", "."]
    _doc(
        root,
        "111",
        "train",
        tokens,
        participants="1111110000",
        interventions="0011000000",
        outcomes="0001110100",
    )
    _doc(root, "222", "train", ["Adults", "were", "treated"], participants="100")
    _doc(root, "333", "test/gold", ["Placebo", "."], interventions="11")
    _write(root / INDEX / "train_pmid.tsv", "111")
    _write(root / INDEX / "dev_pmid.tsv", "222")
    _write(root / INDEX / "test_pmid.tsv", "333")
    return root


def test_rules_on_hand_written_files(tiny_root):
    frames = parse_task("ebmpico", tiny_root)
    train = frames["train"]
    assert list(train["id"]) == ["111-0", "111-1"]
    assert list(train["tokens"]) == [
        ["Patients", "given", "aspirin", "had", "less", "pain", "."],
        ["Pain", "fell", "."],
    ]
    # token 2: P+I -> I-INT; token 3: P+I+O -> I-OUT; tokens 4-5: P+O -> I-OUT
    assert list(train["tags"]) == [
        ["I-PAR", "I-PAR", "I-INT", "I-OUT", "I-OUT", "I-OUT", "O"],
        ["I-OUT", "O", "O"],
    ]
    assert list(frames["dev"]["tags"]) == [["I-PAR", "O", "O"]]  # no "." -> one sentence
    assert list(frames["test"]["tags"]) == [["I-INT", "I-INT"]]  # read from test/gold
    stats = prepare_task("ebmpico", tiny_root, tiny_root.parent / "out")
    assert stats["splits"]["train"]["pico_words"] == {"I-INT": 1, "I-OUT": 4, "I-PAR": 2}
    assert stats["splits"]["train"]["labelled_words"] == 7
    assert stats["splits"]["train"]["tokens"] == 10


def test_precedence_and_split_helpers():
    flags = {
        "participants": [True, True, True, False],
        "interventions": [False, True, True, True],
        "outcomes": [False, False, True, False],
    }
    assert document_tags(4, flags) == ["I-PAR", "I-INT", "I-OUT", "I-INT"]
    assert sentences([".", "a", ".", "b"], ["O", "O", "O", "O"]) == [
        (["."], ["O"]),
        (["a", "."], ["O", "O"]),
        (["b"], ["O"]),
    ]
    assert sentences([], []) == []


# --- malformed inputs ----------------------------------------------------------------------


def _assert_error(root: Path, out: Path, *fragments: str, line: int | None = None):
    error = prepare_fails("ebmpico", root, out, *fragments, line=line)
    assert error.line == line
    return error


def test_ann_line_count_differs(tiny_root, tmp_path):
    _write(tiny_root / ANN / "outcomes/train/111.AGGREGATED.ann", "0\n1\n0\n")
    error = _assert_error(
        tiny_root,
        tmp_path / "out",
        "outcomes/train/111.AGGREGATED.ann",
        "documents/111.tokens",
        "3 labels",
        "10 tokens",
    )
    assert error.path.endswith("111.AGGREGATED.ann")


def test_ann_too_long_points_at_first_extra_line(tiny_root, tmp_path):
    _write(tiny_root / ANN / "participants/test/gold/333.AGGREGATED.ann", "0\n0\n1\n")
    _assert_error(
        tiny_root,
        tmp_path / "out",
        "participants/test/gold/333.AGGREGATED.ann",
        "333.tokens",
        "3 labels",
        "2 tokens",
        line=3,
    )


def test_ann_bad_value(tiny_root, tmp_path):
    _write(tiny_root / ANN / "interventions/train/222.AGGREGATED.ann", "0\n2\n0\n")
    _assert_error(
        tiny_root, tmp_path / "out", "interventions/train/222.AGGREGATED.ann:2:", "'2'", line=2
    )


def test_test_document_missing_from_gold(tiny_root, tmp_path):
    (tiny_root / ANN / "outcomes/test/gold/333.AGGREGATED.ann").unlink()
    _assert_error(tiny_root, tmp_path / "out", "outcomes/test/gold/333.AGGREGATED.ann", "not found")


def test_bad_index_entry(tiny_root, tmp_path):
    _write(tiny_root / INDEX / "dev_pmid.tsv", "222,abc")
    _assert_error(tiny_root, tmp_path / "out", "ebmnlp/dev_pmid.tsv", "'abc'")
