"""ChemProt: the BLURB preparation rule on hand-written raw files, its errors, and the synthetic
generator -> prepare round trip (DESIGN §4)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score

from blurbflow.data.errors import DataFormatError
from blurbflow.data.generate import generate_source
from blurbflow.data.parsers import COLUMNS, parse_task
from blurbflow.data.parsers.chemprot import dummify, split_files
from blurbflow.data.parsers.sentences import sentence_spans
from blurbflow.data.prepare import prepare_task
from blurbflow.tasks.registry import TASKS

SPLITS = ("train", "dev", "test")
SPEC = TASKS["chemprot"]
MARKERS = ("@CHEMICAL$", "@GENE$", "@CHEM-GENE$")


# --- hand-written raw files ------------------------------------------------------------------


def _entity_lines(pmid: str, text: str, entities: list[tuple[str, str, str, int]]) -> list[str]:
    """(id, type, mention, occurrence) -> entity lines with offsets found in `text`."""
    lines = []
    for entity_id, kind, mention, occurrence in entities:
        start = -1
        for _ in range(occurrence + 1):
            start = text.index(mention, start + 1)
        lines.append(f"{pmid}\t{entity_id}\t{kind}\t{start}\t{start + len(mention)}\t{mention}")
    return lines


TITLE = "Aspirin inhibits COX1 in platelets"  # no final period: only the tab ends it
ABSTRACT = (
    "COX2 is activated by ibuprofen. "
    "The glutamate receptor was blocked by memantine given s.c. to rats. "
    "Naproxen was given. PTGS3 rose. "
    "Celecoxib acts on PTGS4 and PTGS5."
)
TEXT = f"{TITLE}\t{ABSTRACT}"
ENTITIES = [
    ("T1", "CHEMICAL", "Aspirin", 0),
    ("T2", "GENE-Y", "COX1", 0),
    ("T3", "GENE-Y", "COX2", 0),
    ("T4", "CHEMICAL", "ibuprofen", 0),
    ("T5", "GENE-N", "glutamate receptor", 0),
    ("T6", "CHEMICAL", "glutamate", 0),
    ("T7", "CHEMICAL", "memantine", 0),
    ("T8", "CHEMICAL", "Naproxen", 0),
    ("T9", "GENE-Y", "PTGS3", 0),
    ("T10", "CHEMICAL", "Celecoxib", 0),
    ("T11", "GENE-N", "PTGS4", 0),
    ("T12", "GENE-Y", "PTGS5", 0),
    ("T13", "GENE-N", "given. PTGS3", 0),  # straddles two sentences: in no pair
]
RELATIONS = [
    "100\tCPR:9\tY \tSUBSTRATE\tArg1:T1\tArg2:T2",  # overridden by the next line for T1-T2
    "100\tCPR:4\tY \tINHIBITOR\tArg1:T1\tArg2:T2",
    "100\tCPR:3\tY \tACTIVATOR\tArg1:T4\tArg2:T3",  # gene first in the text: reversed lookup
    "100\tCPR:6\tY \tANTAGONIST\tArg1:T7\tArg2:T5",
    "100\tCPR:4\tY \tINHIBITOR\tArg1:T8\tArg2:T9",  # across sentences: no instance
    "100\tCPR:4\tN \tINHIBITOR\tArg1:T10\tArg2:T11",  # flagged N -> false
    "100\tCPR:1\tY \tPART-OF\tArg1:T10\tArg2:T12",  # not a BLURB group -> false
    "100\tCPR:5\tY \tAGONIST\tArg1:T10\tArg2:T12",
    "100\tCPR:2\tN \tREGULATOR\tArg1:T10\tArg2:T12",  # the last line wins: false
]


def _write_split(
    root: Path, split: str, abstracts: list[str], entities: list[str], relations: list[str]
) -> dict[str, Path]:
    paths = split_files(root, split)
    paths["abstracts"].parent.mkdir(parents=True, exist_ok=True)
    for kind, lines in (("abstracts", abstracts), ("entities", entities), ("relations", relations)):
        paths[kind].write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return paths


def _write_corpus(root: Path) -> Path:
    for split in SPLITS:
        _write_split(root, split, [f"100\t{TEXT}"], _entity_lines("100", TEXT, ENTITIES), RELATIONS)
    return root


@pytest.fixture
def tiny(tmp_path) -> pd.DataFrame:
    frames = parse_task("chemprot", _write_corpus(tmp_path / "raw"))
    assert frames["train"].equals(frames["dev"].assign(split="train"))
    return frames["train"].set_index("id")


def test_tiny_rule(tiny):
    # every CHEMICAL x GENE pair inside one sentence, nothing across sentences (T8-T9) or with
    # an entity that straddles a sentence end (T13); the title ends at the tab
    assert sorted(tiny.index) == sorted(
        ["100.T1.T2", "100.T3.T4", "100.T5.T6", "100.T5.T7", "100.T10.T11", "100.T10.T12"]
    )
    assert tiny.loc["100.T1.T2", "label"] == "CPR:4"  # the last line for (T1, T2) wins
    assert tiny.loc["100.T3.T4", "label"] == "CPR:3"  # e1 = COX2; found as (T4, T3)
    assert tiny.loc["100.T5.T7", "label"] == "CPR:6"
    assert tiny.loc["100.T5.T6", "label"] == "false"  # overlapping pair without a relation
    assert tiny.loc["100.T10.T11", "label"] == "false"  # CPR:4 but flagged N
    assert tiny.loc["100.T10.T12", "label"] == "false"  # CPR:5, then a later N line
    assert tiny.loc["100.T1.T2", "text"] == "@CHEMICAL$ inhibits @GENE$ in platelets"
    assert tiny.loc["100.T3.T4", "text"] == "@GENE$ is activated by @CHEMICAL$."
    # a gene that contains a chemical: one @CHEM-GENE$ (a tie of starts puts the gene first)
    assert tiny.loc["100.T5.T6", "text"] == (
        "The @CHEM-GENE$ was blocked by memantine given s.c. to rats."
    )
    assert tiny.loc["100.T5.T7", "text"] == (
        "The @GENE$ was blocked by @CHEMICAL$ given s.c. to rats."
    )
    assert tiny.loc["100.T10.T12", "text"] == "@CHEMICAL$ acts on PTGS4 and @GENE$."


def test_tiny_spans_point_at_the_entities(tiny):
    mentions = {entity_id: mention for entity_id, _, mention, _ in ENTITIES}
    types = {entity_id: kind for entity_id, kind, _, _ in ENTITIES}
    for row_id, row in tiny.iterrows():
        _, e1, e2 = row_id.split(".")
        sentence = row["original_text"]
        assert sentence in TEXT
        assert sentence[row["e1_start"] : row["e1_end"]] == mentions[e1]
        assert sentence[row["e2_start"] : row["e2_end"]] == mentions[e2]
        assert (row["e1_type"], row["e2_type"]) == (types[e1], types[e2])
        assert row["e1_start"] <= row["e2_start"]


def test_sentence_spans_follow_punkt_then_tabs():
    text = "A title without period\tFirst one, given s.c. to rats vs. mice. Dr. Varden agreed."
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "A title without period",
        "First one, given s.c. to rats vs. mice.",
        "Dr. Varden agreed.",
    ]
    # BLURB's English Punkt parameters do break after "e.g." and "i.v." (not abbreviations there)
    text = "Agents, e.g. aspirin, were given i.v. and then measured."
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "Agents, e.g.",
        "aspirin, were given i.v.",
        "and then measured.",
    ]


def test_dummify():
    sentence = "aspirin blocks COX1 here"
    assert dummify(sentence, (0, 7, "@CHEMICAL$"), (15, 19, "@GENE$")) == (
        "@CHEMICAL$ blocks @GENE$ here"
    )
    assert dummify(sentence, (0, 19, "@GENE$"), (8, 14, "@CHEMICAL$")) == "@CHEM-GENE$ here"
    assert dummify(sentence, (0, 7, "@GENE$"), (0, 14, "@CHEMICAL$")) == "@CHEM-GENE$ COX1 here"


# --- malformed input: DataFormatError naming file and line -----------------------------------

GOOD_ABSTRACTS = [f"100\t{TEXT}", "200\tSecond title.\tPlain text."]
GOOD_ENTITIES = _entity_lines("100", TEXT, ENTITIES[:4])
GOOD_RELATIONS = RELATIONS[1:3]


@pytest.mark.parametrize(
    ("kind", "bad_line", "fragment"),
    [
        ("abstracts", "300\tonly a title", "expected 3 tab-separated columns"),
        ("abstracts", "100\tagain\tthe same PMID", "PMID 100 occurs twice"),
        ("entities", "100\tT9\tCHEMICAL\t10", "expected 6 tab-separated columns"),
        ("entities", "100\tT9\tDRUG\t0\t7\tAspirin", "unknown entity type 'DRUG'"),
        ("entities", "100\tT9\tCHEMICAL\t400\t407\tAspirin", "outside the text of PMID 100"),
        ("entities", "100\tT9\tCHEMICAL\tzero\t7\tAspirin", "start offset 'zero'"),
        ("entities", "100\tT9\tCHEMICAL\t1\t8\tAspirin", "does not match the text"),
        ("entities", "999\tT9\tCHEMICAL\t0\t7\tAspirin", "PMID 999 is not in the abstracts"),
        ("entities", "100\tT1\tCHEMICAL\t0\t7\tAspirin", "entity T1 of PMID 100 occurs twice"),
        ("relations", "100\tCPR:4\tY \tINHIBITOR\tArg1:T1", "expected 6 tab-separated columns"),
        (
            "relations",
            "100\tCPR:4\tY \tINHIBITOR\tArg1:T1\tArg2:T77",
            "Arg2 'T77' is not an entity",
        ),
        ("relations", "200\tCPR:4\tY \tINHIBITOR\tArg1:T1\tArg2:T2", "Arg1 'T1' is not an entity"),
        ("relations", "100\tCPR:4\tmaybe\tINHIBITOR\tArg1:T1\tArg2:T2", "flag 'maybe'"),
        ("relations", "100\tCPR4\tY \tINHIBITOR\tArg1:T1\tArg2:T2", "CPR group 'CPR4'"),
        ("relations", "100\tCPR:4\tY \tINHIBITOR\tT1\tArg2:T2", "does not start with 'Arg1:'"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, kind, bad_line, fragment):
    files = {
        "abstracts": list(GOOD_ABSTRACTS),
        "entities": list(GOOD_ENTITIES),
        "relations": list(GOOD_RELATIONS),
    }
    files[kind].insert(1, bad_line)  # line 2 of that file
    for split in SPLITS:
        _write_split(tmp_path, split, files["abstracts"], files["entities"], files["relations"])
    with pytest.raises(DataFormatError) as caught:
        parse_task("chemprot", tmp_path)
    train = split_files(tmp_path, "train")[kind]
    assert caught.value.path == str(train) and caught.value.line == 2
    assert str(caught.value).startswith(f"{train}:2: ")
    assert fragment in str(caught.value)


def test_missing_file_says_to_download(tmp_path):
    with pytest.raises(DataFormatError, match="file not found .*download the 'chemprot'"):
        parse_task("chemprot", tmp_path)


def test_file_names_follow_the_corpus():
    names = {
        split: {
            kind: path.relative_to(Path("raw")).as_posix()
            for kind, path in split_files(Path("raw"), split).items()
        }
        for split in SPLITS
    }
    assert names["dev"]["entities"] == (
        "chemprot/ChemProt_Corpus/chemprot_development/chemprot_development_entities.tsv"
    )
    assert names["test"]["relations"] == (
        "chemprot/ChemProt_Corpus/chemprot_test_gs/chemprot_test_relations_gs.tsv"
    )


# --- generator -> prepare round trip ---------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, dict, dict[str, pd.DataFrame]]:
    root = tmp_path_factory.mktemp("chemprot")
    generate_source("chemprot", root / "raw" / "chemprot", seed=0)
    stats = prepare_task("chemprot", root / "raw", root / "out")
    assert json.loads((root / "out" / "stats.json").read_text()) == stats
    frames = {s: pd.read_parquet(root / "out" / f"{s}.parquet") for s in SPLITS}
    return root / "raw", stats, frames


def test_generated_layout(generated):
    raw, _, _ = generated
    corpus = raw / "chemprot" / "ChemProt_Corpus"
    assert sorted(p.relative_to(corpus).as_posix() for p in corpus.rglob("*.tsv")) == sorted(
        [
            f"chemprot_training/chemprot_training_{k}.tsv"
            for k in ("abstracts", "entities", "relations", "gold_standard")
        ]
        + [
            f"chemprot_development/chemprot_development_{k}.tsv"
            for k in ("abstracts", "entities", "relations", "gold_standard")
        ]
        + [
            f"chemprot_test_gs/chemprot_test_{k}_gs.tsv"
            for k in ("abstracts", "entities", "relations")
        ]
        + ["chemprot_test_gs/chemprot_test_gold_standard.tsv"]
    )
    for split, size in zip(SPLITS, (300, 150, 150), strict=True):
        lines = split_files(raw, split)["abstracts"].read_text().splitlines()
        assert len(lines) == size and all(line.count("\t") == 2 for line in lines)
    relations = split_files(raw, "train")["relations"].read_text()
    assert "\tN \t" in relations and "\tY \t" in relations


def test_generated_counts_and_schema(generated):
    raw, stats, frames = generated
    for split, low in zip(SPLITS, (1000, 500, 500), strict=True):
        frame = frames[split]
        assert stats["splits"][split]["instances"] == len(frame) > low
        assert list(frame.columns) == list(COLUMNS["re"])
        assert set(frame["split"]) == {split}
        assert frame["id"].map(type).eq(str).all() and frame["id"].is_unique
        counts = stats["splits"][split]["label_counts"]
        assert set(counts) == set(SPEC.labels)  # every class occurs
        assert counts == frame["label"].value_counts().to_dict()
        assert 0.4 < counts["false"] / len(frame) < 0.75  # many negatives
        # no relation is lost to sentence splitting: every gold relation became an instance
        folder = split_files(raw, split)["abstracts"].parent
        gold = next(folder.glob("*gold_standard.tsv")).read_text().splitlines()
        assert len(gold) == len(frame) - counts["false"]


def test_generated_texts(generated):
    _, _, frames = generated
    frame = pd.concat(frames.values())
    for text in frame["text"]:
        found = {marker: text.count(marker) for marker in MARKERS}
        assert found in (
            {"@CHEMICAL$": 1, "@GENE$": 1, "@CHEM-GENE$": 0},
            {"@CHEMICAL$": 0, "@GENE$": 0, "@CHEM-GENE$": 1},
        ), text
    for row in frame.itertuples():
        spans = sorted(
            [(row.e1_start, row.e1_end, row.e1_type), (row.e2_start, row.e2_end, row.e2_type)]
        )
        marked = [(s, e, "@CHEMICAL$" if kind == "CHEMICAL" else "@GENE$") for s, e, kind in spans]
        assert dummify(row.original_text, *marked) == row.text
    overlap = frame["text"].str.contains("@CHEM-GENE$", regex=False)
    assert overlap.sum() > 10 and (frame.loc[overlap, "label"] == "false").all()
    original = " ".join(frame["original_text"])
    assert " s.c." in original and " vs. " in original and "Dr. " in original


def test_generated_signal(generated):
    """Bag of words on the marked text learns the cue verbs (micro F1 without `false`)."""
    _, _, frames = generated
    vectorizer = CountVectorizer(ngram_range=(1, 2), token_pattern=r"[@\w$-]+")
    model = LogisticRegression(max_iter=2000).fit(
        vectorizer.fit_transform(frames["train"]["text"]), frames["train"]["label"]
    )
    predicted = model.predict(vectorizer.transform(frames["dev"]["text"]))
    positives = [label for label in SPEC.labels if label != SPEC.negative_label]
    f1 = f1_score(frames["dev"]["label"], predicted, labels=positives, average="micro")
    assert f1 > 0.8, f1


def test_generation_is_deterministic_in_seed(generated, tmp_path):
    raw, _, _ = generated

    def tree(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.tsv")}

    generate_source("chemprot", tmp_path / "same", seed=0)
    generate_source("chemprot", tmp_path / "other", seed=1)
    assert tree(tmp_path / "same") == tree(raw / "chemprot")
    assert tree(tmp_path / "other") != tree(raw / "chemprot")
