"""Config expansion into cells: recipes as data, grids, seeds, and clear errors for bad names."""

import copy
import json
import math

import pytest
import yaml

from blurbflow.config import cell_jobs, expand_cells
from blurbflow.config.grid import hparams_name
from blurbflow.config.recipes import resolve_recipe
from blurbflow.config.validate import (
    MAX_CELLS,
    MAX_GRID,
    MAX_SEEDS,
    NAME_PATTERN,
    check_config,
    check_names,
)
from blurbflow.options import options_json
from blurbflow.util.errors import ConfigError

DEMO = yaml.safe_load(open("config/demo.yaml"))


def test_demo_expands_to_20_cells_with_full_options():
    cells = expand_cells(DEMO)
    assert len(cells) == 5 * 2 * 2
    cell = cells["results/cells/tiny-biobert/gad/layer-specific/lr0.001-bs16/seed2"]
    assert cell.options.layerwise_lr_decay == 0.8 and cell.options.reinit_top == 1
    assert cell.options.max_length == 128  # GAD's Gu length from the task registry
    assert cell.options.seed == 2 and cell.options.epochs == 3
    biosses = cells["results/cells/tiny-biobert/biosses/standard/lr0.001-bs16/seed1"]
    assert biosses.options.epochs == 20  # per-task epochs mapping


def test_recipe_extends_and_overrides():
    recipe = resolve_recipe(DEMO, "layer-specific")
    assert recipe["lr"] == 1e-3 and recipe["batch_size"] == 16 and recipe["warmup_ratio"] == 0.1
    assert resolve_recipe(DEMO, "standard")["layerwise_lr_decay"] is None


def test_grid_and_seed_list():
    config = copy.deepcopy(DEMO)
    config["recipes"]["standard"]["lr"] = [1e-5, 3e-5, 5e-5]
    config["recipes"]["standard"]["batch_size"] = [16, 32]
    config["studies"]["demo"]["seeds"] = [7, 9]
    config["studies"]["demo"]["recipes"] = ["standard"]
    cells = expand_cells(config)
    assert len(cells) == 5 * 3 * 2 * 2
    assert {c.hparams for c in cells.values()} == {
        hparams_name(lr, bs) for lr in (1e-5, 3e-5, 5e-5) for bs in (16, 32)
    }
    assert {c.seed for c in cells.values()} == {7, 9}


@pytest.mark.parametrize(
    ("key", "bad", "message"),
    [
        ("recipes", "standrd", "unknown recipe 'standrd' (did you mean 'standard'?)"),
        ("tasks", "ncbi", "unknown task 'ncbi'"),
        ("models", "tiny-bert", "unknown model 'tiny-bert'"),
    ],
)
def test_unknown_names_are_named(key, bad, message):
    config = copy.deepcopy(DEMO)
    config["studies"]["demo"][key] = [bad]
    with pytest.raises(ConfigError) as error:
        check_names(config)
    assert str(error.value).startswith(f"studies.demo.{key}: ") and message in str(error.value)


def test_circular_extends_is_reported():
    config = copy.deepcopy(DEMO)
    config["recipes"]["standard"]["extends"] = "layer-specific"
    with pytest.raises(ConfigError, match="circular"):
        resolve_recipe(config, "standard")


# --------------------------------------------------------------------------------------------
# Validation that catches typos and unsafe names (blurbflow.config.validate)
# --------------------------------------------------------------------------------------------

SCHEMA = yaml.safe_load(open("workflow/schemas/config.schema.yaml"))
DEFAULT = yaml.safe_load(open("config.yaml"))


def _renamed(section: str, old: str, new: str) -> dict:
    """The demo config with `section.old` renamed to `new`, and every reference to it."""
    config = copy.deepcopy(DEMO)
    config[section][new] = config[section].pop(old)
    study = next(iter(config["studies"].values()))
    if section in ("models", "recipes"):
        study[section] = [new if item == old else item for item in study[section]]
    if section == "recipes":
        study["baseline"] = new if study["baseline"] == old else study["baseline"]
    return config


@pytest.mark.parametrize(
    ("section", "name"),
    [
        ("recipes", "tinn/llrd-0.8"),
        ("recipes", ".."),
        ("recipes", "my recipé ü"),
        ("studies", "../../../ESCAPED"),
        ("models", "m$(touch PWNED)"),
        ("models", ".hidden"),
        ("models", "x" * 65),
    ],
)
def test_unsafe_names_are_refused_naming_the_section_and_the_rule(section, name):
    old = {"recipes": "layer-specific", "studies": "demo", "models": "tiny-biobert"}[section]
    with pytest.raises(ConfigError) as error:
        check_config(_renamed(section, old, name), SCHEMA)
    message = str(error.value)
    assert message.startswith(f"{section}: the name {name!r} is not allowed")
    assert NAME_PATTERN in message and "letters, digits, '.', '_' and '-'" in message


def test_safe_names_with_dots_and_dashes_expand_into_their_own_folders():
    config = _renamed("recipes", "layer-specific", "tinn-llrd-0.8")
    check_config(config, SCHEMA)
    paths = {cell.path for cell in expand_cells(config).values()}
    assert "results/cells/tiny-biobert/gad/tinn-llrd-0.8/lr0.001-bs16/seed2" in paths
    assert len(paths) == 20


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c["recipes"]["standard"].update(epochs={"default": 4, "biosess": 20}),
            "recipes.standard.epochs.biosess: unknown task 'biosess' (did you mean 'biosses'?)",
        ),
        (
            lambda c: c.update(defaults={"epochs": {"default": 3, "hocc": 5}}),
            "defaults.epochs.hocc: unknown task 'hocc' (did you mean 'hoc'?)",
        ),
        (
            lambda c: c["models"]["tiny-biobert"].update(corpus_tasks=["ncbidisease", "gda"]),
            "models.tiny-biobert.corpus_tasks: unknown task 'gda' (did you mean 'gad'?)",
        ),
        (
            lambda c: c.update(tasks={"biosess": {"max_length": 64}}),
            "tasks.biosess: unknown task 'biosess' (did you mean 'biosses'?)",
        ),
        (
            lambda c: c["studies"]["demo"].update(seeds={"default": 2, "biosess": 3}),
            "studies.demo.seeds.biosess: not one of the study's tasks",
        ),
        (
            lambda c: c["recipes"]["layer-specific"].update(extends="standrd"),
            "unknown recipe 'standrd' (did you mean 'standard'?)",
        ),
    ],
    ids=["epochs", "defaults-epochs", "corpus_tasks", "tasks", "seeds", "extends"],
)
def test_misspelt_task_or_recipe_references_are_named_with_a_suggestion(edit, message):
    config = copy.deepcopy(DEMO)
    edit(config)
    with pytest.raises(ConfigError) as error:
        check_config(config, SCHEMA)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("key", "value", "where"),
    [
        ("lr", math.nan, "recipes.standard.lr"),
        ("warmup_ratio", math.nan, "recipes.standard.warmup_ratio"),
        ("lr", [1e-3, math.inf], "recipes.standard.lr[1]"),
        ("weight_decay", -math.inf, "recipes.standard.weight_decay"),
    ],
)
def test_non_finite_numbers_are_refused_naming_the_key(key, value, where):
    config = copy.deepcopy(DEMO)
    config["recipes"]["standard"][key] = value
    with pytest.raises(ConfigError) as error:
        check_config(config, SCHEMA)
    assert str(error.value).startswith(f"{where}: ") and "is not a finite number" in str(
        error.value
    )
    with pytest.raises(ConfigError, match="not a finite number"):
        expand_cells(config)  # the schema-free path (library callers) refuses it too


def test_grid_values_with_the_same_folder_are_an_error_naming_both():
    config = copy.deepcopy(DEMO)
    config["recipes"]["standard"]["lr"] = [1e-3, 1.0000001e-3]
    with pytest.raises(ConfigError) as error:
        expand_cells(config)
    message = str(error.value)
    assert message.startswith("recipes.standard: two grid points (lr=0.001 vs lr=0.0010000001)")
    assert "'lr0.001-bs16'" in message
    config["recipes"]["standard"]["lr"] = [1e-3, 1.00001e-3]  # 6 significant digits: distinct
    assert len(expand_cells(config)) == 5 * 2 * 2 * 2  # layer-specific extends standard


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c["studies"]["demo"].update(seeds=100_000_000),
            "studies.demo.seeds: 100000000 is greater than the maximum of 1000",
        ),
        (
            lambda c: c["studies"]["demo"].update(seeds={"default": 2, "hoc": 5000}),
            "studies.demo.seeds.hoc: 5000 is greater than the maximum of 1000",
        ),
        (
            lambda c: c["recipes"]["standard"].update(
                lr=[i * 1e-5 for i in range(1, 21)], batch_size=list(range(1, 11))
            ),
            "recipes.standard: a grid of 200 hyperparameter points is more than the limit of 100",
        ),
        (
            lambda c: (
                c["studies"]["demo"].update(seeds=1000)
                or c["recipes"]["standard"].update(lr=[i * 1e-5 for i in range(1, 51)])
            ),
            f"studies: 500,000 cells is more than the limit of {MAX_CELLS:,}",
        ),
    ],
    ids=["seeds", "seeds-per-task", "grid", "cells"],
)
def test_sizes_are_bounded_with_a_clear_message(edit, message):
    config = copy.deepcopy(DEMO)
    edit(config)
    with pytest.raises(ConfigError) as error:
        check_config(config, SCHEMA)
    assert message in str(error.value)
    assert MAX_SEEDS == 1000 and MAX_GRID == 100


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c["models"]["tiny-biobert"].update(path="resources"),
            "models.tiny-biobert.path: 'resources': a model with `build: demo` is built into "
            "resources/models/tiny-biobert/",
        ),
        (
            lambda c: c["models"]["tiny-biobert"].update(path="resources/models/../../.."),
            "models.tiny-biobert.path: 'resources/models/../../..' leaves or replaces",
        ),
        (lambda c: c.update(hf_cache="../../hf-cache"), "hf_cache: '../../hf-cache' leaves"),
        (lambda c: c.update(hf_cache="."), "hf_cache: '.' leaves or replaces"),
        (
            lambda c: c.update(data={"bioasq_dir": "--manual-dir=/etc"}),
            "data.bioasq_dir: '--manual-dir=/etc' is not a usable path",
        ),
        (
            lambda c: c["models"].update(other={"hub_id": "org/m$(touch PWNED)"}),
            "models.other.hub_id: 'org/m$(touch PWNED)' is not a Hugging Face model id",
        ),
        (
            lambda c: c["models"].update(other={"hub_id": "org/m", "revision": "main;id"}),
            "models.other.revision: 'main;id' is not a branch, tag or commit name",
        ),
    ],
    ids=["build-path", "build-escape", "hf_cache", "hf_cache-dot", "bioasq", "hub_id", "revision"],
)
def test_unsafe_paths_and_hub_names_are_refused(edit, message):
    config = copy.deepcopy(DEMO)
    edit(config)
    with pytest.raises(ConfigError) as error:
        check_config(config, SCHEMA)
    assert message in str(error.value)


def test_missing_local_model_is_reported_with_the_fix(tmp_path):
    config = copy.deepcopy(DEMO)
    config["models"]["local"] = {"path": str(tmp_path / "absent")}
    check_config(config, SCHEMA)  # not used by a study: not needed
    config["studies"]["demo"]["models"].append("local")
    with pytest.raises(ConfigError) as error:
        check_config(config, SCHEMA)
    assert f"models.local.path: folder '{tmp_path / 'absent'}' does not exist" in str(error.value)
    assert "`snakemake prefetch` only fetches hub models" in str(error.value)
    (tmp_path / "absent").mkdir()  # an empty folder (or a mistyped path that exists)
    with pytest.raises(ConfigError, match="holds no model: no config.json"):
        check_config(config, SCHEMA)
    for name in ("config.json", "vocab.txt", "model.safetensors"):  # what a model folder holds
        (tmp_path / "absent" / name).write_text("{}")
    check_config(config, SCHEMA)


def _job_params(config: dict) -> dict[str, str]:
    return {
        path: options_json(job.options.to_dict())
        for path, job in cell_jobs(expand_cells(config)).items()
    }


def test_editing_a_description_changes_no_jobs_params():
    """Descriptions, titles and table layouts are not options: editing them re-runs nothing."""
    before = _job_params(DEFAULT)
    edited = copy.deepcopy(DEFAULT)
    edited["recipes"]["standard"]["description"] = "Gu et al. standard fine-tuning (typo fixed)"
    for study in edited["studies"].values():
        study["title"] = study.get("title", "") + " (edited)"
        study["description"] = "edited"
        study["table"] = {"rows": "model", "columns": ["task"]}
    check_config(edited, SCHEMA)
    assert _job_params(edited) == before
    assert not any("description" in json.loads(p) for p in before.values())
    # the control: an option that changes computation changes the params of exactly the jobs of
    # a recipe no other recipe extends
    extended = {r.get("extends") for r in DEFAULT["recipes"].values()}
    leaf = next(name for name in DEFAULT["recipes"] if name not in extended)
    edited["recipes"][leaf]["warmup_ratio"] = 0.06
    changed = {p for p, params in _job_params(edited).items() if params != before[p]}
    assert changed == {p for p in before if p.split("/")[4] == leaf} and changed
