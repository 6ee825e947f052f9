"""Deviations the fidelity map (docs/fidelity.md) must state, derived from what the code and
config.yaml do: the epoch range Gu's studies select from, the input length of the ALBERT NER
cells, the Tinn tables transcribed as printed only; and a study titled as Gu et al.'s protocol
(config.yaml's, config/blurb.yaml's) selects the epoch as Gu do. Each check is shown failing on
a planted example; tests/test_paper_config.py checks the map's studies and cell counts."""

from __future__ import annotations

import re

import pandas as pd
import yaml

from blurbflow.config import expand_cells
from blurbflow.published import printed_only
from blurbflow.results.common_epoch import choose_points

from workflow_helpers import REPO

CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
BLURB = yaml.safe_load((REPO / "config/blurb.yaml").read_text())
FIDELITY = (REPO / "docs/fidelity.md").read_text()
GU_STUDIES = [name for name in CONFIG["studies"] if name.startswith("gu-")]


def row(text: str, first_cell: str) -> str:
    """The table row whose first cell starts with `first_cell` ('' if none)."""
    found = re.findall(rf"^\| {re.escape(first_cell)}[^|]*\|.*$", text, re.M)
    return found[0] if found else ""


def albert_ner_lengths() -> set[int]:
    """The input lengths of biom-table2's ALBERT NER cells (BioM-Transformers Table 2)."""
    albert = {m for m, e in CONFIG["models"].items() if "albert" in str(e.get("hub_id", ""))}
    cells = expand_cells(CONFIG, ["biom-table2"]).values()
    ner = {"bc5chem", "bc5disease", "ncbidisease"}
    return {c.options.max_length for c in cells if c.model in albert and c.task in ner}


def section(text: str, heading: str) -> str:
    """The `## heading…` section of `text` ('' if none)."""
    found = re.search(rf"^## {re.escape(heading)}.*?(?=^## |\Z)", text, re.M | re.S)
    return found.group(0) if found else ""


def missing_statements(text: str) -> list[str]:
    """The protocol points `text` (the fidelity map) leaves unstated."""
    missing = []
    epochs = row(text, "Epoch number")
    if "2–60" not in epochs or not re.search(r"epoch 1 can be (?:chosen|selected)", epochs):
        missing.append("Epoch number: epoch 1 can be chosen, Gu searches 2–60")
    if albert_ner_lengths() == {256} and "no ALBERT run" not in section(text, "Alrowili"):
        missing.append("BioM-Transformers: ALBERT NER at 256 tokens extrapolates the notebook")
    tinn = section(text, "Tinn")
    for study, table in (("tinn-table10", "Table 10"), ("tinn-table11", "Table 11")):
        said = row(tinn, table)
        tools = {label.split()[0] for label in printed_only(study)}  # scispaCy, Stanza
        if (
            f"`{study}`" not in said
            or not all(tool in said for tool in tools)
            or ("printed only" not in said)
        ):
            missing.append(f"{study}: the off-the-shelf tools are printed only")
    return missing


def test_gus_studies_can_select_epoch_1():
    # the fact the map states: the common epoch is chosen among every recorded evaluation,
    # from epoch 1 (Gu 6.2 searches 2-60); the Gu studies all choose it so
    assert {CONFIG["studies"][s].get("select") for s in GU_STUDIES} == {"common_epoch"}
    dev = {1: [0.9, 0.8], 2: [0.7, 0.7]}  # two seeds, epoch 1 best on mean dev
    rows = [
        ("m", "t", "r", "h", seed, epoch, -1, score)
        for epoch, scores in dev.items()
        for seed, score in enumerate(scores, 1)
    ]
    frame = pd.DataFrame(rows, columns=["model", "task", "recipe", "hparams", "seed", "epoch",
                                        "step", "dev"])  # fmt: skip
    assert choose_points(frame, ["model", "task", "recipe", "hparams"], "seed") == {
        ("m", "t", "r", "h"): (1, -1)
    }


def test_the_map_states_each_deviation():
    assert albert_ner_lengths() == {256}
    assert missing_statements(FIDELITY) == []


def test_a_deviation_left_unstated_is_caught():
    planted = FIDELITY.replace("epoch 1 can be", "an epoch can be")
    assert missing_statements(planted) == ["Epoch number: epoch 1 can be chosen, Gu searches 2–60"]
    planted = FIDELITY.replace("no ALBERT run", "an ALBERT run")
    assert missing_statements(planted) == [
        "BioM-Transformers: ALBERT NER at 256 tokens extrapolates the notebook"
    ]
    planted = FIDELITY.replace("printed only", "transcribed")
    assert missing_statements(planted) == [
        "tinn-table10: the off-the-shelf tools are printed only",
        "tinn-table11: the off-the-shelf tools are printed only",
    ]


def gu_titles_without_gus_epoch(config: dict) -> list[str]:
    """Studies whose title names Gu et al.'s protocol but which keep each seed's own best epoch
    (Gu 6.2 tunes the epoch number on dev, one for every seed: `select: common_epoch`)."""
    return [
        name
        for name, study in config["studies"].items()
        if "Gu et al." in study.get("title", "") and study.get("select") != "common_epoch"
    ]


def test_a_study_titled_as_gus_protocol_selects_the_epoch_as_gu():
    assert "Gu et al." in BLURB["studies"]["blurb"]["title"]
    assert gu_titles_without_gus_epoch(BLURB) == []
    assert gu_titles_without_gus_epoch(CONFIG) == []
    planted = {"studies": {"blurb": {**BLURB["studies"]["blurb"], "select": "per_seed"}}}
    assert gu_titles_without_gus_epoch(planted) == ["blurb"]
