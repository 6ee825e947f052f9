"""DDI: generator -> prepare round trip, BLURB's rules on tiny hand-written XML (pair-less
sentences dropped, overlapping and discontinuous entities), and malformed inputs."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score

from blurbflow.data.generate.ddi import SPLIT_SIZES, ddi_split_files
from blurbflow.data.parsers import COLUMNS, parse_task
from blurbflow.data.parsers.ddi import dummify
from blurbflow.tasks.registry import TASKS

from data_helpers import generate_and_prepare, prepare_fails
from data_helpers import write as _write

SPLITS = ("train", "dev", "test")
INDEX = Path("blurb-index/data_generation/indexing/DDI")
ROOT = Path("ddi/DDIextraction_2013")


# --- generated corpus ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, dict, dict[str, pd.DataFrame]]:
    return generate_and_prepare(tmp_path_factory, "ddi")


def test_round_trip_counts_and_schema(generated):
    root, stats, frames = generated
    labels = set(TASKS["ddi"].labels)
    for split in SPLITS:
        frame = frames[split]
        files = (root / INDEX / f"{split}_files.tsv").read_text().split("\n")
        assert len(files) == SPLIT_SIZES[split]
        assert all((root / ROOT / name).is_file() for name in files)
        if split != "test":
            assert all(name.startswith("train_dataset/") for name in files)
        pairs = sum((root / ROOT / name).read_text().count("<pair ") for name in files)
        assert stats["splits"][split]["instances"] == len(frame) == pairs > 0
        assert list(frame.columns) == list(COLUMNS["re"])
        assert frame["id"].is_unique and set(frame["split"]) == {split}
        assert set(frame["label"]) == labels
        assert stats["splits"][split]["label_counts"] == frame["label"].value_counts().to_dict()
        markers = frame["text"].str.count(re.escape("@DRUG$")) + 2 * frame["text"].str.count(
            re.escape("@DRUG-DRUG$")
        )
        assert (markers == 2).all()
        assert (frame["e1_start"] <= frame["e2_start"]).all()
        for row in frame.itertuples():  # text is original_text with the two spans replaced
            spans = (row.e1_start, row.e1_end), (row.e2_start, row.e2_end)
            assert row.text == dummify(row.original_text, *spans)


def test_generated_corpus_exercises_the_rules(generated):
    root, _, frames = generated
    xml = "".join(p.read_text() for p in (root / ROOT).rglob("*.xml"))
    assert re.search(r'charOffset="\d+-\d+;\d+-\d+"', xml)  # discontinuous entities
    assert re.search(r"<sentence [^>]*/>", xml)  # sentences without entities
    assert "&#xa;" in xml and "_ddi.xml" in "".join(ddi_split_files()["train"])
    assert frames["train"]["text"].str.contains("@DRUG-DRUG$", regex=False).any()
    dropped = [
        m
        for m in re.finditer(r"<sentence [^/]*?>(.*?)</sentence>", xml, re.S)
        if "<entity" in m.group(1) and "<pair" not in m.group(1)
    ]
    assert dropped  # sentences with one entity and no pair exist (and yield nothing)


def test_signal(generated):
    """Bag of n-grams beats the majority baseline (micro F1 over the positive types = 0)."""
    _, _, frames = generated
    vectorizer = CountVectorizer(ngram_range=(1, 3), token_pattern=r"[@\w$-]+")
    model = LogisticRegression(max_iter=2000).fit(
        vectorizer.fit_transform(frames["train"]["text"]), frames["train"]["label"]
    )
    positives = [label for label in TASKS["ddi"].labels if label != "DDI-false"]
    for split in ("dev", "test"):
        guess = model.predict(vectorizer.transform(frames[split]["text"]))
        f1 = f1_score(frames[split]["label"], guess, labels=positives, average="micro")
        assert f1 > 0.6, (split, f1)


# --- BLURB's rules on hand-written XML -------------------------------------------------------

DOC = """<?xml version="1.0" encoding="UTF-8"?>
<document id="DDI-MedLine.d1">
    <sentence id="DDI-MedLine.d1.s0" text="Aspirin &amp; warfarin.&#xa;"/>
    <sentence id="DDI-MedLine.d1.s1" text="Aspirin is absorbed.">
        <entity id="DDI-MedLine.d1.s1.e0" charOffset="0-6" type="drug" text="Aspirin"/>
    </sentence>
    <sentence id="DDI-MedLine.d1.s2" text="Aspirin increases levels of warfarin.">
        <entity id="DDI-MedLine.d1.s2.e0" charOffset="0-6"
            type="drug" text="Aspirin"/>
        <entity id="DDI-MedLine.d1.s2.e1" charOffset="28-35"
            type="brand" text="warfarin"/>
        <pair id="DDI-MedLine.d1.s2.p0" e1="DDI-MedLine.d1.s2.e0"
            e2="DDI-MedLine.d1.s2.e1" ddi="true" type="mechanism"/>
    </sentence>
    <sentence id="DDI-MedLine.d1.s3" text="Calcium and sodium channel blockers affect digoxin.">
        <entity id="DDI-MedLine.d1.s3.e0" charOffset="0-6;19-34"
            type="group" text="Calcium channel blockers"/>
        <entity id="DDI-MedLine.d1.s3.e1" charOffset="12-34"
            type="group" text="sodium channel blockers"/>
        <entity id="DDI-MedLine.d1.s3.e2" charOffset="43-49" type="drug" text="digoxin"/>
        <pair id="DDI-MedLine.d1.s3.p0" e1="DDI-MedLine.d1.s3.e0"
            e2="DDI-MedLine.d1.s3.e1" ddi="false"/>
        <pair id="DDI-MedLine.d1.s3.p1" e1="DDI-MedLine.d1.s3.e0"
            e2="DDI-MedLine.d1.s3.e2" ddi="true" type="effect"/>
        <pair id="DDI-MedLine.d1.s3.p2" e1="DDI-MedLine.d1.s3.e1"
            e2="DDI-MedLine.d1.s3.e2" ddi="true" type="int"/>
    </sentence>
</document>
"""
OTHER = """<?xml version="1.0" encoding="UTF-8"?>
<document id="DDI-DrugBank.d2">
    <sentence id="DDI-DrugBank.d2.s0" text="Do not combine X with Y.">
        <entity id="DDI-DrugBank.d2.s0.e0" charOffset="15-15" type="drug" text="X"/>
        <entity id="DDI-DrugBank.d2.s0.e1" charOffset="22-22" type="drug" text="Y"/>
        <pair id="DDI-DrugBank.d2.s0.p0" e1="DDI-DrugBank.d2.s0.e0" e2="DDI-DrugBank.d2.s0.e1"
            ddi="true" type="advise"/>
    </sentence>
</document>
"""


@pytest.fixture
def tiny_root(tmp_path) -> Path:
    root = tmp_path / "raw"
    _write(root / ROOT / "train_dataset/MedLine/1.xml", DOC)
    _write(root / ROOT / "train_dataset/DrugBank/Some drug_ddi.xml", OTHER)
    _write(root / ROOT / "test_dataset/DrugBank/Some drug.xml", OTHER)
    _write(root / INDEX / "train_files.tsv", "train_dataset/MedLine/1.xml")
    _write(root / INDEX / "dev_files.tsv", "train_dataset/DrugBank/Some drug_ddi.xml\n")
    _write(root / INDEX / "test_files.tsv", "test_dataset/DrugBank/Some drug.xml")
    return root


def test_rules_on_hand_written_xml(tiny_root):
    frames = parse_task("ddi", tiny_root)
    train = frames["train"].set_index("id")
    # pair-less sentences (s0 without entities, s1 with one entity) give nothing
    assert list(train.index) == [
        "DDI-MedLine.d1.s2.p0",
        "DDI-MedLine.d1.s3.p0",
        "DDI-MedLine.d1.s3.p1",
        "DDI-MedLine.d1.s3.p2",
    ]
    assert list(train["label"]) == ["DDI-mechanism", "DDI-false", "DDI-effect", "DDI-int"]
    plain = train.loc["DDI-MedLine.d1.s2.p0"]
    assert plain["text"] == "@DRUG$ increases levels of @DRUG$."
    assert (plain["e1_start"], plain["e1_end"], plain["e2_start"], plain["e2_end"]) == (
        0,
        7,
        28,
        36,
    )
    assert (plain["e1_type"], plain["e2_type"]) == ("drug", "brand")
    # the discontinuous group spans "Calcium ... blockers" and so overlaps "sodium ... blockers"
    overlap = train.loc["DDI-MedLine.d1.s3.p0"]
    assert overlap["text"] == "@DRUG-DRUG$ affect digoxin."
    assert (overlap["e1_start"], overlap["e1_end"], overlap["e2_start"]) == (0, 35, 12)
    assert train.loc["DDI-MedLine.d1.s3.p1", "text"] == "@DRUG$ affect @DRUG$."
    assert train.loc["DDI-MedLine.d1.s3.p2", "text"] == "Calcium and @DRUG$ affect @DRUG$."
    assert train.loc["DDI-MedLine.d1.s3.p2", "original_text"] == (
        "Calcium and sodium channel blockers affect digoxin."
    )
    assert list(frames["dev"]["text"]) == ["Do not combine @DRUG$ with @DRUG$."]
    assert list(frames["test"]["label"]) == ["DDI-advise"]


def test_dummify():
    assert dummify("A and B.", (0, 1), (6, 7)) == "@DRUG$ and @DRUG$."
    assert dummify("A and B.", (6, 7), (0, 1)) == "@DRUG$ and @DRUG$."
    assert dummify("AB and C.", (0, 2), (1, 2)) == "@DRUG-DRUG$ and C."
    assert dummify("AB and C.", (0, 1), (0, 2)) == "@DRUG-DRUG$ and C."
    assert dummify("AB.", (0, 1), (1, 2)) == "@DRUG$@DRUG$."  # adjacent is not overlapping


# --- malformed inputs ----------------------------------------------------------------------


def _assert_error(root: Path, out: Path, *fragments: str, line: int | None = None):
    return prepare_fails("ddi", root, out, *fragments, line=line)


def test_malformed_xml_names_file_and_line(tiny_root, tmp_path):
    path = tiny_root / ROOT / "train_dataset/MedLine/1.xml"
    lines = DOC.split("\n")
    lines[4] = lines[4].replace('"/>', '">')  # the entity on line 5 is left open
    path.write_text("\n".join(lines), encoding="utf-8")
    error = _assert_error(
        tiny_root, tmp_path / "out", "MedLine/1.xml", "malformed XML", "mismatched tag", line=6
    )
    assert error.path.endswith("1.xml")


def test_truncated_xml(tiny_root, tmp_path):
    path = tiny_root / ROOT / "train_dataset/MedLine/1.xml"
    path.write_text(DOC[: DOC.index("</sentence>", 500)], encoding="utf-8")
    _assert_error(
        tiny_root, tmp_path / "out", "MedLine/1.xml", "malformed XML", "re-run the download step"
    )


def test_pair_with_unknown_entity(tiny_root, tmp_path):
    path = tiny_root / ROOT / "train_dataset/MedLine/1.xml"
    path.write_text(
        DOC.replace('e2="DDI-MedLine.d1.s2.e1"', 'e2="DDI-MedLine.d1.s2.e9"'), encoding="utf-8"
    )
    _assert_error(tiny_root, tmp_path / "out", "MedLine/1.xml", "DDI-MedLine.d1.s2.e9", line=12)


def test_true_pair_without_type(tiny_root, tmp_path):
    path = tiny_root / ROOT / "train_dataset/MedLine/1.xml"
    path.write_text(DOC.replace('ddi="true" type="mechanism"', 'ddi="true"'), encoding="utf-8")
    _assert_error(tiny_root, tmp_path / "out", "MedLine/1.xml", "type=None", line=12)


def test_bad_char_offset(tiny_root, tmp_path):
    path = tiny_root / ROOT / "test_dataset/DrugBank/Some drug.xml"
    path.write_text(OTHER.replace('charOffset="22-22"', 'charOffset="22-80"'), encoding="utf-8")
    _assert_error(tiny_root, tmp_path / "out", "Some drug.xml", "runs past the sentence", line=5)


def test_doctype_is_rejected(tiny_root, tmp_path):
    path = tiny_root / ROOT / "test_dataset/DrugBank/Some drug.xml"
    path.write_text(
        OTHER.replace("<document", '<!DOCTYPE document [<!ENTITY a "aaaa">]>\n<document', 1),
        encoding="utf-8",
    )
    _assert_error(
        tiny_root, tmp_path / "out", "Some drug.xml", "document type declarations", line=2
    )


def test_listed_file_missing(tiny_root, tmp_path):
    (tiny_root / ROOT / "test_dataset/DrugBank/Some drug.xml").unlink()
    _assert_error(tiny_root, tmp_path / "out", "Some drug.xml", "not found", "download")


def test_hostile_index_entry(tiny_root, tmp_path):
    _write(tiny_root / INDEX / "dev_files.tsv", "train_dataset/DrugBank/x.xml\n../../etc/a.xml")
    _assert_error(tiny_root, tmp_path / "out", "DDI/dev_files.tsv", "'../../etc/a.xml'", line=2)
