"""A cell's typed options (blurbflow.options): the serialised form round trips, unknown keys are
refused by name, options that are not set stay out of it, the recipe defaults are the fields'
defaults, the tokenization key round trips, and the object is frozen."""

from __future__ import annotations

import dataclasses
import json
import pickle

import pytest

from blurbflow.options import (
    UNSET,
    CellOptions,
    InitFrom,
    InputOptions,
    ModelOptions,
    defaults,
    options_json,
)
from blurbflow.util.errors import ConfigError

from model_helpers import make_options

# Gu et al. 2021's recipe, as blurbflow.config.GU_DEFAULTS gave it before the typed options
GU_DEFAULTS = {
    "epochs": 3,
    "lr": 5e-5,
    "batch_size": 32,
    "warmup_ratio": 0.1,
    "weight_decay": 0.01,
    "dropout": 0.1,
    "adam_bias_correction": False,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-6,
    "max_grad_norm": 1.0,
    "freeze_lower": 0,
    "layerwise_lr_decay": None,
    "reinit_top": 0,
    "remove_top": 0,
    "select": "best_dev",
    "eval_batch_size": 64,
    "train_on": "train",
    "train_subsample": None,
    "subsample_seed": 0,
    "segment_ids": "pair",
    "tagging": "BIO",
    "head": "linear",
    "re_input": "dummify",
    "re_pooling": "cls",
    "batching": "bucketed",
    "precision": "bf16",
}
PLACE = {"model": "m", "model_source": "org/m", "task": "gad", "recipe": "r", "hparams": "h"}
# options that join a cell only when set
OPTIONAL = (
    "seed",
    "eval_every_steps",
    "patience",
    "revision",
    "cased",
    "add_prefix_space",
    "trust_remote_code",
    "sha256",
    "subfolder",
    "hparams_from",
    "hparams_task",
    "selection_file",
    "selected_from",
    "init_from",
    "keep_weights",
)


def test_defaults_are_the_recipe_defaults():
    assert defaults() == GU_DEFAULTS
    options = CellOptions(**PLACE, inputs=InputOptions(max_length=128))
    given = {**PLACE, "max_length": 128, "code_version": "1"}
    assert options.to_dict() == {**GU_DEFAULTS, **given}
    assert defaults() is not defaults() and defaults() == defaults()  # a fresh copy each call


def test_to_dict_and_from_dict_round_trip():
    every = make_options(
        seed=4,
        lr=1e-3,
        tagging="BIOUL",
        re_input="markers",
        patience=2,
        eval_every_steps=50,
        revision="v1.1",
        cased=True,
        add_prefix_space=False,
        trust_remote_code=True,
        hparams_from=["search"],
        hparams_task="gad-fold3",
        selection_file="results/selection/tiny/gad/r.json",
        selected_from="search/lr1e-05-bs16",
        init_from={"task": "bc5chem", "recipe": "src", "hparams": "h", "seed": "same"},
        keep_weights=True,
    )
    assert isinstance(every.init_from, InitFrom) and every.init_from.task == "bc5chem"
    for options in (make_options(), make_options(seed=1), every):
        serialised = options.to_dict()
        assert CellOptions.from_dict(serialised) == options
        # the flat form: input options at the top level, nested ones as plain mappings
        assert "inputs" not in serialised and serialised["max_length"] == 128
        assert json.loads(options_json(serialised)) == serialised
    assert every.to_dict()["init_from"] == {
        "task": "bc5chem",
        "recipe": "src",
        "hparams": "h",
        "seed": "same",
    }
    assert every.to_dict()["tagging"] == "BIOUL" and every.inputs.re_input == "markers"
    assert pickle.loads(pickle.dumps(every)) == every  # UNSET survives (seed-less jobs too)
    assert pickle.loads(pickle.dumps(every.job)).seed is UNSET


def test_options_json_is_canonical():
    assert options_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'


def test_unknown_keys_are_refused_with_their_names():
    with pytest.raises(ConfigError, match=r"recipes\.r: unknown option\(s\) 'lrr'"):
        CellOptions.from_dict({**make_options().to_dict(), "lrr": 1e-3}, where="recipes.r")
    with pytest.raises(ConfigError, match=r"unknown option\(s\) 'inputs', 'warmup'"):
        CellOptions.from_dict({**make_options().to_dict(), "warmup": 0.1, "inputs": {}})
    with pytest.raises(ConfigError, match="no max_length"):
        CellOptions.from_dict({**PLACE})
    with pytest.raises(ConfigError, match="options: .*'model_source'"):
        CellOptions.from_dict(
            {k: v for k, v in make_options().to_dict().items() if k != "model_source"}
        )


def test_unset_options_stay_out_of_the_serialised_form():
    options = make_options()
    assert not (set(OPTIONAL) & set(options.to_dict()))
    assert all(getattr(options, name) is UNSET for name in OPTIONAL)
    assert not UNSET and repr(UNSET) == "UNSET"
    seeded = options.with_seed(3)
    assert seeded.to_dict() == {**options.to_dict(), "seed": 3} and seeded.job == options
    assert seeded.cell_id == "tiny/gad/r/h/seed3"
    set_to_none = options.replace(patience=None)  # set, even to None: part of the cell
    assert set_to_none.to_dict()["patience"] is None
    # the model's settings: only those it sets
    model = make_options(revision="v2").model_options
    assert model == ModelOptions(model="tiny", model_source="tiny", revision="v2")
    assert model.to_dict() == {"model": "tiny", "model_source": "tiny", "revision": "v2"}


def test_selection_is_last_when_dev_is_trained_on():
    assert make_options().selection == "best_dev"
    assert make_options(select="last").selection == "last"
    assert make_options(train_on="train+dev", select="best_dev").selection == "last"


@pytest.mark.parametrize(
    ("key", "inputs", "applicable"),
    [
        ("L256-markers", {"max_length": 256, "re_input": "markers"}, ("re_input",)),
        ("L512-BIOUL", {"max_length": 512, "tagging": "BIOUL"}, ("tagging",)),
        ("L64-single", {"max_length": 64, "segment_ids": "single"}, ("segment_ids",)),
        ("L512", {"max_length": 512}, ()),
        ("L128-dummify", {"max_length": 128}, ("re_input",)),
    ],
)
def test_input_key_round_trips(key, inputs, applicable):
    parsed = InputOptions.from_key(key)
    assert parsed == InputOptions(**inputs)  # what the key leaves out: the defaults
    assert parsed.key(applicable) == key


def test_input_keys_and_values_that_are_refused():
    for bad in ("256-markers", "Lx", "L256-bogus", "L256-BIO-IO", ""):
        with pytest.raises(ValueError, match="input key"):
            InputOptions.from_key(bad)
    with pytest.raises(ValueError, match="unknown or repeated part 'bogus'"):
        InputOptions.from_key("L256-bogus")
    with pytest.raises(ConfigError, match="tagging: 'BILOU' is not one of BIO, BIOUL, IO"):
        InputOptions(max_length=64, tagging="BILOU").key(("tagging",))
    assert InputOptions.VALUES["re_input"] == ("dummify", "markers", "original")


def test_options_are_frozen_and_keyword_only():
    options = make_options()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.lr = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.inputs.max_length = 1
    with pytest.raises(TypeError):
        CellOptions("m", "org/m", "gad", "r", "h")  # keyword-only
    changed = options.replace(lr=1.0)
    assert changed.lr == 1.0 and options.lr == 5e-5 and changed != options
    assert options.max_length == options.inputs.max_length == 128


def test_the_rules_between_options_live_in_check_options():
    from blurbflow.options import check_options

    check_options(make_options(), "recipes.r", entities=True)  # the defaults pass
    with pytest.raises(ConfigError, match=r"recipes\.r\.patience: early stopping needs"):
        check_options(make_options(train_on="train+dev", patience=2), "recipes.r")
    check_options(make_options(train_on="train+dev", patience=None), "recipes.r")
    start = make_options(re_pooling="entity_start")
    with pytest.raises(ConfigError, match=r"recipes\.r\.re_pooling: .*needs re_input: markers"):
        check_options(start, "recipes.r", entities=True)
    check_options(start, "recipes.r")  # no entities (NER, STS …): the pooling is not used
    check_options(make_options(re_pooling="entity_start", re_input="markers"), "x", entities=True)
    with pytest.raises(
        ConfigError, match=r"recipes\.r\.head: 'bilstm' does not apply to extractive"
    ):
        check_options(make_options(head="bilstm"), "recipes.r", span=True)


def test_the_rules_run_when_the_config_is_read():
    import yaml

    from blurbflow.config import expand_cells

    config = yaml.safe_load(open("config/demo.yaml"))
    config["recipes"]["standard"]["re_pooling"] = "entity_start"  # gad is a relation task
    with pytest.raises(ConfigError, match=r"recipes\.standard\.re_pooling: 'entity_start'"):
        expand_cells(config)
    config["recipes"]["standard"]["re_input"] = "markers"
    assert expand_cells(config)
