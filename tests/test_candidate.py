"""`--config model=…` (blurbflow.models.candidate): a hub id, a pinned revision or a local folder
becomes the model `candidate` of config/blurb.yaml, which then validates; a missing model, one
no study asks for, and one the config defines as well stop with the way to pass it."""

from __future__ import annotations

import copy

import pytest
import yaml

from blurbflow.config.validate import check_config
from blurbflow.models.candidate import CANDIDATE, apply_model_option, model_entry
from blurbflow.util.errors import ConfigError

from workflow_helpers import REPO

BLURB = yaml.safe_load((REPO / "config/blurb.yaml").read_text())
SCHEMA = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())


def with_model(value) -> dict:
    config = copy.deepcopy(BLURB)
    config["model"] = value
    apply_model_option(config)
    return config


def test_the_shipped_config_is_gu_s_protocol_on_the_13_tasks_beside_pubmedbert():
    study = BLURB["studies"]["blurb"]
    assert study["models"] == [CANDIDATE, "pubmedbert"] and len(study["tasks"]) == 13
    assert study["seeds"] == {"default": 5, "biosses": 10, "pubmedqa": 10, "bioasq": 10}
    standard = BLURB["recipes"]["standard"]
    assert standard["lr"] == [1.0e-5, 3.0e-5, 5.0e-5] and standard["batch_size"] == [16, 32]


@pytest.mark.parametrize(
    "value, entry",
    [
        ("dmis-lab/biobert-base-cased-v1.1", {"hub_id": "dmis-lab/biobert-base-cased-v1.1"}),
        ("org/name@v1.0", {"hub_id": "org/name", "revision": "v1.0"}),
        ("bert-base-uncased", {"hub_id": "bert-base-uncased"}),
        ("./my-model", {"path": "./my-model"}),
        ("/models/mine", {"path": "/models/mine"}),
    ],
)
def test_a_hub_id_or_a_path_becomes_the_candidate_entry(value, entry):
    assert model_entry(value) == entry
    config = with_model(value)
    assert config["models"][CANDIDATE] == entry and "pubmedbert" in config["models"]


def test_an_existing_folder_is_a_local_model_and_the_config_validates(tmp_path, monkeypatch):
    (tmp_path / "org" / "name").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)  # a folder that looks like a hub id is the local model
    config = with_model("org/name")
    assert config["models"][CANDIDATE] == {"path": "org/name"}
    with pytest.raises(ConfigError, match="holds no model"):  # empty: a typo that exists
        check_config(config, SCHEMA)
    for name in ("config.json", "vocab.txt", "model.safetensors"):
        (tmp_path / "org" / "name" / name).write_text("{}")
    check_config(config, SCHEMA)


def test_a_hub_candidate_validates_and_a_bad_id_is_named():
    check_config(with_model("org/name@main"), SCHEMA)
    with pytest.raises(ConfigError, match=r"models\.candidate\.hub_id"):
        check_config(with_model("org/na me"), SCHEMA)
    with pytest.raises(ConfigError, match="ends with '@'"):
        with_model("org/name@")


def test_a_missing_local_folder_is_named():
    with pytest.raises(ConfigError, match=r"models\.candidate\.path: folder './nowhere'"):
        check_config(with_model("./nowhere"), SCHEMA)


@pytest.mark.parametrize("value", [None, "", "  "])
def test_no_model_stops_naming_how_to_pass_it(value):
    with pytest.raises(ConfigError, match=r"^model: study 'blurb' .*--config model=org/name"):
        with_model(value)


def test_a_model_no_study_asks_for_and_a_candidate_defined_twice_are_refused():
    config = copy.deepcopy(BLURB)
    config["studies"]["blurb"]["models"] = ["pubmedbert"]
    config["model"] = "org/name"
    with pytest.raises(ConfigError, match="no study of this config lists the model 'candidate'"):
        apply_model_option(config)
    config = copy.deepcopy(BLURB)
    config["models"][CANDIDATE] = {"hub_id": "other/model"}
    apply_model_option(config)  # defined in the config, no `model`: kept as it is
    assert config["models"][CANDIDATE] == {"hub_id": "other/model"}
    config["model"] = "org/name"
    with pytest.raises(ConfigError, match="defines it and `model` names 'org/name'"):
        apply_model_option(config)
    with pytest.raises(ConfigError, match="is not a model id or folder"):
        with_model(12)


def test_applying_it_twice_changes_nothing():
    config = with_model("org/name")
    again = copy.deepcopy(config)
    apply_model_option(again)
    assert again == config
