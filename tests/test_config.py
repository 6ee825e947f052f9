"""Config expansion into cells: recipes as data, grids, seeds, and clear errors for bad names."""

import copy

import pytest
import yaml

from blurbflow.config import ConfigError, check_names, expand_cells, hparams_name, resolve_recipe

DEMO = yaml.safe_load(open("config/demo.yaml"))


def test_demo_expands_to_20_cells_with_full_options():
    cells = expand_cells(DEMO)
    assert len(cells) == 5 * 2 * 2
    cell = cells["results/cells/tiny-biobert/gad/layer-specific/lr0.001-bs16/seed2"]
    assert cell.options["layerwise_lr_decay"] == 0.8 and cell.options["reinit_top"] == 1
    assert cell.options["max_length"] == 128  # GAD's Gu length from the task registry
    assert cell.options["seed"] == 2 and cell.options["epochs"] == 3
    biosses = cells["results/cells/tiny-biobert/biosses/standard/lr0.001-bs16/seed1"]
    assert biosses.options["epochs"] == 20  # per-task epochs mapping


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
