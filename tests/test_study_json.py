"""results/{study}.json (blurbflow.results.study_json) on known cells: per model column and task
the seeds' scores at the grid point chosen on dev with mean, std and n; the BLURB score; the
config hash (what changes it and what does not); versions and commit."""

from __future__ import annotations

import copy
import json
import math

import pytest
from test_results import frame_of

from blurbflow import steps
from blurbflow.results.study_json import (
    study_config,
    study_config_hash,
    study_results,
    write_study_results,
)
from blurbflow.util.provenance import REPORT_PACKAGES, package_version

CONFIG = {
    "code_version": "1",
    "models": {
        "candidate": {"hub_id": "org/name", "revision": "v1"},
        "pubmedbert": {"hub_id": "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract"},
        "unused": {"path": "somewhere"},
    },
    "recipes": {
        "base": {"epochs": 3},
        "standard": {"extends": "base", "lr": [1.0e-5, 3.0e-5]},
        "other": {"lr": 1.0e-3},
    },
    "studies": {
        "blurb": {
            "title": "BLURB",
            "models": ["candidate", "pubmedbert"],
            "tasks": ["gad", "biosses"],
            "recipes": ["standard"],
            "seeds": 2,
            "table": {"rows": "task", "columns": ["model"]},
        },
        "another": {"models": ["unused"], "tasks": ["gad"], "recipes": ["other"], "seeds": 1},
    },
}
OK = "ok"
CELLS = frame_of(
    [
        # candidate, biosses: lr1e-05 is best on dev (mean 81 > 70), its test scores 90, 92
        ("candidate", "biosses", "standard", "lr1e-05", 1, 80.0, 90.0, OK),
        ("candidate", "biosses", "standard", "lr1e-05", 2, 82.0, 92.0, OK),
        ("candidate", "biosses", "standard", "lr3e-05", 1, 70.0, 99.0, OK),
        ("candidate", "biosses", "standard", "lr3e-05", 2, 70.0, 99.0, OK),
        ("candidate", "gad", "standard", "lr1e-05", 1, 70.0, 80.0, OK),
        ("candidate", "gad", "standard", "lr1e-05", 2, 70.0, 84.0, OK),
        # pubmedbert: one seed of biosses diverged, gad never finished
        ("pubmedbert", "biosses", "standard", "lr1e-05", 1, 85.0, 93.0, OK),
        ("pubmedbert", "biosses", "standard", "lr1e-05", 2, math.nan, math.nan, "diverged"),
        ("pubmedbert", "gad", "standard", "lr1e-05", 1, math.nan, math.nan, "missing"),
    ]
)


@pytest.fixture(scope="module")
def results() -> dict:
    return study_results(CELLS, CONFIG, "blurb")


def column(results: dict, model: str) -> dict:
    (found,) = [c for c in results["columns"] if c["model"] == model]
    return found


def test_per_task_scores_of_the_point_chosen_on_dev_with_their_spread(results):
    candidate = column(results, "candidate")
    assert results["tasks"] == ["gad", "biosses"]  # BLURB's order
    assert candidate["recipe"] == "standard"
    biosses = candidate["tasks"]["biosses"]
    assert biosses["scores"] == [90.0, 92.0] and biosses["n"] == 2 and biosses["diverged"] == 0
    assert biosses["mean"] == 91.0 and biosses["std"] == pytest.approx(math.sqrt(2))
    assert biosses["median"] == 91.0 and biosses["iqr"] == pytest.approx(1.0)
    assert candidate["tasks"]["gad"]["mean"] == 82.0
    assert results["metrics"] == {"gad": "positive_f1", "biosses": "pearson"}


def test_the_blurb_score_averages_task_types_and_is_null_without_every_task(results):
    candidate, pubmedbert = column(results, "candidate"), column(results, "pubmedbert")
    # gad (relation extraction) and biosses (sentence similarity): two types, one task each
    assert candidate["blurb"]["mean"] == pytest.approx((82.0 + 91.0) / 2)
    assert candidate["blurb"]["score"] == candidate["blurb"]["mean"]  # statistic: mean
    assert candidate["blurb"]["label"].startswith("BLURB-style average")
    biosses = pubmedbert["tasks"]["biosses"]
    assert biosses["n"] == 1 and biosses["diverged"] == 1 and biosses["std"] is None
    assert pubmedbert["tasks"]["gad"]["n"] == 0 and pubmedbert["tasks"]["gad"]["mean"] is None
    assert pubmedbert["blurb"]["mean"] is None and pubmedbert["blurb"]["n"] == 0


def test_provenance_names_the_config_hash_versions_and_commit(results):
    assert results["study"] == "blurb" and results["format"] == 1
    assert results["models"]["candidate"] == {"hub_id": "org/name", "revision": "v1"}
    assert len(results["config_hash"]) == 64
    assert results["config_hash"] == study_config_hash(CONFIG, "blurb")
    assert results["blurbflow_version"] == package_version("blurbflow")
    assert set(results["versions"]) == set(REPORT_PACKAGES)
    assert "git_commit" in results and isinstance(results["git_dirty"], bool)


def changed(edit) -> dict:
    config = copy.deepcopy(CONFIG)
    edit(config)
    return config


def test_the_config_hash_follows_what_the_study_depends_on_and_nothing_else():
    before = study_config_hash(CONFIG, "blurb")
    assert set(study_config(CONFIG, "blurb")["recipes"]) == {"standard", "base"}
    # another candidate, a recipe it extends, the seeds: another hash
    for edit in (
        lambda c: c["models"]["candidate"].update(revision="v2"),
        lambda c: c["recipes"]["base"].update(epochs=4),
        lambda c: c["studies"]["blurb"].update(seeds=3),
    ):
        assert study_config_hash(changed(edit), "blurb") != before
    # another study's model or recipe, the key order: the same hash
    for edit in (
        lambda c: c["models"]["unused"].update(path="elsewhere"),
        lambda c: c["recipes"]["other"].update(lr=1.0e-4),
        lambda c: c.update(models=dict(reversed(list(c["models"].items())))),
    ):
        assert study_config_hash(changed(edit), "blurb") == before


def test_the_file_is_strict_json_and_the_tables_step_writes_one_per_study(tmp_path, results):
    write_study_results(results, tmp_path / "blurb.json")
    text = (tmp_path / "blurb.json").read_text()
    assert "NaN" not in text and json.loads(text) == results
    CELLS.to_parquet(tmp_path / "cells.parquet")
    steps.tables(CONFIG, str(tmp_path / "cells.parquet"), str(tmp_path / "tables"))
    for name in CONFIG["studies"]:
        written = json.loads((tmp_path / f"{name}.json").read_text())
        assert written["study"] == name
        assert written["config_hash"] == study_config_hash(CONFIG, name)
    assert column(json.loads((tmp_path / "blurb.json").read_text()), "candidate") == column(
        results, "candidate"
    )


def test_the_reproduction_verdicts_are_counted():
    """results/{study}.json counts the reproduction view's verdicts (results/reproduction.py)."""
    config = copy.deepcopy(CONFIG)
    config["studies"]["blurb"]["published"] = {
        "source": "stand-in",
        "decimals": 1,
        # candidate biosses 90, 92: [78.3, 100] around 91; gad 80, 84: [56.6, 100] around 82
        "values": {"biosses": {"candidate": 91.0, "pubmedbert": 93.0}, "gad": {"candidate": 20.0}},
    }
    assert study_results(CELLS, config, "blurb")["reproduction"] == {
        "entries": 6,
        "published": 3,
        "reproduced": 0,
        "differs": 1,  # gad: 20 is far below [56.6, 100]
        "inconclusive": 2,  # candidate biosses: too wide; pubmedbert biosses: one seed
        "not_comparable": 0,
        "not_printed": 3,
    }
    assert study_results(CELLS, CONFIG, "blurb")["reproduction"]["published"] == 0
