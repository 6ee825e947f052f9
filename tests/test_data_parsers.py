"""Parser rules on small hand-written inputs, and malformed inputs: a DataFormatError naming the
file and line, and prepare_task leaving nothing behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blurbflow.data.errors import DataFormatError
from blurbflow.data.generate import generate_source
from blurbflow.data.parsers import parse_task
from blurbflow.data.parsers.conll import read_conll
from blurbflow.data.parsers.hoc import sentence_labels

from data_helpers import prepare_fails, replace_line
from data_helpers import write as _write

# --- NER ---------------------------------------------------------------------------------------

CONLL = (
    "-DOCSTART- 91079577\n"
    "\n"
    "IL-2\tB-protein\n"
    "gene\tI-protein\n"
    "expression\tO\r\n"
    "\n"
    "\n"
    "-DOCSTART-\tO\n"
    "\n"
    "CD28\tB\n"
    "binds\tO\n"
    "NF-kappa\tB-DNA\n"
    "B\tI-DNA\n"
)


def test_conll_drops_docstart_and_collapses_tags(tmp_path):
    sentences = read_conll(_write(tmp_path / "train.tsv", CONLL), "jnlpba")
    assert sentences == [
        (["IL-2", "gene", "expression"], ["B", "I", "O"]),
        (["CD28", "binds", "NF-kappa", "B"], ["B", "O", "B", "I"]),
    ]


@pytest.fixture
def ner_root(tmp_path) -> Path:
    generate_source("bc5chem", tmp_path / "raw" / "bc5chem", seed=3)
    return tmp_path / "raw"


def test_ner_three_columns(ner_root, tmp_path):
    path = ner_root / "bc5chem" / "train.tsv"
    old = replace_line(path, 5, "Selegiline\tB-Chemical\textra")
    assert old.strip()  # line 5 of a generated file is a token line (sentences have >= 10)
    prepare_fails("bc5chem", ner_root, tmp_path / "out", "bc5chem/train.tsv:5:", "found 3")


def test_ner_unknown_tag(ner_root, tmp_path):
    replace_line(ner_root / "bc5chem" / "devel.tsv", 7, "Selegiline\tX-Foo")
    prepare_fails("bc5chem", ner_root, tmp_path / "out", "bc5chem/devel.tsv:7:", "'X-Foo'")


def test_ner_missing_file(ner_root, tmp_path):
    (ner_root / "bc5chem" / "test.tsv").unlink()
    prepare_fails(
        "bc5chem", ner_root, tmp_path / "out", "bc5chem/test.tsv", "not found", "download"
    )


def test_error_carries_path_and_line(ner_root):
    replace_line(ner_root / "bc5chem" / "train.tsv", 3, "no-tab-here")
    with pytest.raises(DataFormatError) as caught:
        parse_task("bc5chem", ner_root)
    assert isinstance(caught.value, ValueError)
    assert caught.value.line == 3 and caught.value.path.endswith("train.tsv")
    assert "re-run the download step" in str(caught.value)


# --- GAD ---------------------------------------------------------------------------------------


@pytest.fixture
def gad_root(tmp_path) -> Path:
    generate_source("gad", tmp_path / "raw" / "gad", seed=3)
    return tmp_path / "raw"


def test_gad_split_rule(gad_root):
    frames = parse_task("gad", gad_root)
    lines = (gad_root / "gad" / "GAD" / "1" / "train.tsv").read_text().splitlines()
    assert list(frames["train"]["text"]) == [line.split("\t")[0] for line in lines[:4261]]
    assert list(frames["dev"]["text"]) == [line.split("\t")[0] for line in lines[4261:]]
    assert frames["dev"]["id"].iloc[0] == "dev-4262"
    assert frames["test"]["id"].iloc[0] == "test-0"


def test_gad_missing_column(gad_root, tmp_path):
    path = gad_root / "gad" / "GAD" / "1" / "train.tsv"
    sentence = path.read_text().split("\n")[16].split("\t")[0]
    replace_line(path, 17, sentence)  # the label column is gone
    prepare_fails(
        "gad",
        gad_root,
        tmp_path / "out",
        "gad/GAD/1/train.tsv:17:",
        "found 1",
        "BioBERT REdata GAD",
    )


def test_gad_bad_test_label(gad_root, tmp_path):
    replace_line(gad_root / "gad" / "GAD" / "1" / "test.tsv", 4, "2\t@GENE$ and @DISEASE$.\tyes")
    prepare_fails("gad", gad_root, tmp_path / "out", "GAD/1/test.tsv:4:", "'yes'")


def test_gad_too_short(gad_root, tmp_path):
    path = gad_root / "gad" / "GAD" / "1" / "train.tsv"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:4000]))
    prepare_fails("gad", gad_root, tmp_path / "out", "train.tsv", "4000 lines")


# --- PubMedQA ----------------------------------------------------------------------------------


@pytest.fixture
def pqa_root(tmp_path) -> Path:
    generate_source("pubmedqa", tmp_path / "raw" / "pubmedqa", seed=3)
    return tmp_path / "raw"


def test_pubmedqa_bad_json(pqa_root, tmp_path):
    path = pqa_root / "pubmedqa" / "ori_pqal.json"
    assert '"QUESTION"' in replace_line(path, 3, '        "QUESTION": oops,')
    prepare_fails(
        "pubmedqa", pqa_root, tmp_path / "out", "pubmedqa/ori_pqal.json:3:", "invalid JSON"
    )


def test_pubmedqa_bad_decision_points_at_its_record(pqa_root, tmp_path):
    path = pqa_root / "pubmedqa" / "ori_pqal.json"
    data = json.loads(path.read_text())
    pmid = list(data)[1]
    data[pmid]["final_decision"] = "perhaps"
    path.write_text(json.dumps(data, indent=4))
    line = path.read_text().split("\n").index(f'    "{pmid}": {{') + 1
    prepare_fails(
        "pubmedqa", pqa_root, tmp_path / "out", f"ori_pqal.json:{line}:", pmid, "'perhaps'"
    )


def test_pubmedqa_missing_test_pmid(pqa_root, tmp_path):
    path = pqa_root / "pubmedqa" / "test_ground_truth.json"
    truth = json.loads(path.read_text())
    path.write_text(json.dumps({**truth, "99999999": "yes"}))
    prepare_fails("pubmedqa", pqa_root, tmp_path / "out", "99999999", "missing")


# --- HoC ---------------------------------------------------------------------------------------


def test_hoc_label_rules(tmp_path):
    # the real files' spellings: "X AND Y", "XANDY" without a space, "NULL", blank chunks
    path = _write(
        tmp_path / "labels" / "1.txt",
        "< <Sustaining proliferative signaling--Receptors ANDResisting cell death--"
        "Apoptosis< NULL<  Avoiding immune destruction--Immune response AND "
        "Sustaining proliferative signaling--Growth factors--",
    )
    assert sentence_labels(path, 4) == [
        [],
        ["resisting cell death", "sustaining proliferative signaling"],
        [],
        ["avoiding immune destruction", "sustaining proliferative signaling"],
    ]


@pytest.fixture
def hoc_root(tmp_path) -> Path:
    for source in ("hoc", "blurb-index"):
        generate_source(source, tmp_path / "raw" / source, seed=3)
    return tmp_path / "raw"


def _a_labels_file(hoc_root: Path) -> Path:
    index = hoc_root / "blurb-index" / "data_generation" / "indexing" / "HoC" / "dev_pmid.tsv"
    name = index.read_text().split(",")[0]
    return hoc_root / "hoc" / "Hallmarks-of-Cancer-master" / "labels" / name


def test_hoc_unknown_hallmark(hoc_root, tmp_path):
    path = _a_labels_file(hoc_root)
    chunks = path.read_text().split("<")
    chunks[1] = "Cancer vibes--Good"
    path.write_text("<".join(chunks))
    prepare_fails(
        "hoc",
        hoc_root,
        tmp_path / "out",
        f"labels/{path.name}:1:",
        "'Cancer vibes--Good'",
        "hallmarks",
    )


def test_hoc_chunks_must_match_sentences(hoc_root, tmp_path):
    path = _a_labels_file(hoc_root)
    path.write_text(path.read_text() + "< ")
    prepare_fails("hoc", hoc_root, tmp_path / "out", f"labels/{path.name}:1:", "label chunks")


def test_hoc_missing_index(hoc_root, tmp_path):
    index = hoc_root / "blurb-index" / "data_generation" / "indexing" / "HoC" / "test_pmid.tsv"
    index.unlink()
    prepare_fails("hoc", hoc_root, tmp_path / "out", "HoC/test_pmid.tsv", "'blurb-index'")


# --- BIOSSES -----------------------------------------------------------------------------------


def test_biosses_bad_score(tmp_path):
    root = tmp_path / "raw"
    generate_source("biosses", root / "biosses", seed=3)
    path = root / "biosses" / "annotation_pairs_scores.tsv"
    fields = path.read_text().split("\n")[9].split("\t")
    replace_line(path, 10, "\t".join([*fields[:-1], "five"]))
    prepare_fails("biosses", root, tmp_path / "out", "annotation_pairs_scores.tsv:10:", "'five'")


def test_biosses_score_is_mean_of_annotators(tmp_path):
    root = tmp_path / "raw"
    header = "sentence_id\tsentence_1\tsentence_2\t" + "\t".join(f"annotator_{c}" for c in "abcde")
    rows = [f"{i}\tA {i}.\tB {i}. \t4\t3\t3\t2\t{i % 5}" for i in range(1, 101)]
    _write(root / "biosses" / "annotation_pairs_scores.tsv", "\n".join([header, *rows]) + "\n")
    frames = parse_task("biosses", root)
    row = frames["dev"].set_index("id").loc["88"]
    assert row["score"] == pytest.approx((4 + 3 + 3 + 2 + 3) / 5)
    assert row["text_b"] == "B 88."
    assert [len(frames[s]) for s in ("train", "dev", "test")] == [64, 16, 20]


def test_unknown_task():
    with pytest.raises(KeyError, match="unknown task"):
        parse_task("nosuchtask", Path("."))
