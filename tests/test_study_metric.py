"""A study's `metric`: a table of another score its cells' evaluations recorded (Tinn et al.
Table 11: relaxed entity F1 of the models Table 10 selects on strict F1)."""

from __future__ import annotations

import copy

import pytest
import yaml
from results_helpers import load_cells
from test_results import write_result

from blurbflow.config.validate import check_config
from blurbflow.results.study_cells import seed_scores, study_cells
from blurbflow.util.errors import ConfigError

SCHEMA = yaml.safe_load(open("workflow/schemas/config.schema.yaml"))
DEMO = yaml.safe_load(open("config/demo.yaml"))


def record(epoch, dev, test, relaxed):
    return {
        "epoch": epoch,
        "dev": dev,
        "test": test,
        "test_scores": {"entity_f1": test, "relaxed_entity_f1": relaxed},
    }


def test_the_study_metric_is_the_selected_evaluations_other_score(tmp_path):
    epochs = [record(1, 70.0, 71.0, 81.0), record(2, 75.0, 74.0, 84.0)]
    for seed, shift in ((1, 0.0), (2, 2.0)):  # the better grid point, epoch 2 selected
        shifted = [
            {
                **r,
                "test_scores": {"relaxed_entity_f1": r["test_scores"]["relaxed_entity_f1"] + shift},
            }
            for r in epochs
        ]
        write_result(
            tmp_path,
            "m",
            "bc5chem",
            "standard",
            "lr1",
            seed,
            75.0,
            74.0,
            epochs=shifted,
            selected_epoch=2,
        )
        # a worse grid point (lower dev) with a higher relaxed score must not be chosen
        write_result(
            tmp_path,
            "m",
            "bc5chem",
            "standard",
            "lr2",
            seed,
            60.0,
            60.0,
            epochs=[record(1, 60.0, 60.0, 99.0)],
        )
    # a cell written before relaxed F1 was recorded: no score, not a made-up one
    write_result(tmp_path, "m", "ncbidisease", "standard", "lr1", 1, 70.0, 70.0)
    cells = load_cells(sorted(str(p) for p in tmp_path.rglob("result.json")))
    study = {
        "models": ["m"],
        "tasks": ["bc5chem", "ncbidisease"],
        "recipes": ["standard"],
        "seeds": 2,
    }
    strict = seed_scores(study_cells(cells, study))
    assert strict[("m", "bc5chem", "standard")] == [74.0, 74.0]
    relaxed_study = {**study, "metric": "relaxed_entity_f1"}
    selected = study_cells(cells, relaxed_study)
    assert set(selected["hparams"]) == {"lr1"}
    assert seed_scores(selected)[("m", "bc5chem", "standard")] == [84.0, 86.0]
    assert ("m", "ncbidisease", "standard") not in seed_scores(selected)


def test_a_study_metric_its_tasks_do_not_record_stops_at_validation():
    config = copy.deepcopy(DEMO)
    study = next(iter(config["studies"].values()))
    name = next(iter(config["studies"]))
    study["metric"] = "relaxed_entity_f1"
    with pytest.raises(
        ConfigError, match=rf"studies\.{name}\.metric: 'relaxed_entity_f1' is not recorded for task"
    ):
        check_config(config, SCHEMA)
    ner_only = copy.deepcopy(config)
    ner_study = next(iter(ner_only["studies"].values()))
    ner_study["tasks"] = ["ncbidisease"]
    ner_study["metric"] = "relaxed_entity_F1"  # a typo gets a suggestion
    with pytest.raises(ConfigError, match="did you mean 'relaxed_entity_f1'"):
        check_config(ner_only, SCHEMA)
    ner_study["metric"] = "relaxed_entity_f1"
    check_config(ner_only, SCHEMA)
