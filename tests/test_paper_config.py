"""The default config.yaml: the paper studies (Gu et al. 2021, Tinn et al. 2023) expand to
cells as the papers ran them, and `snakemake -n all` plans every one without downloading."""

from __future__ import annotations

import copy
import re
import time

import pytest
import yaml

from blurbflow.config import ConfigError, cell_jobs, check_names, expand_cells, study_seeds
from blurbflow.results.tables import study_layout, study_table

from workflow_helpers import REPO, copy_workflow, snakemake

CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
SMALL_TASKS = {"biosses", "pubmedqa", "bioasq"}  # Gu et al.: 10 seeds; 5 for the others
PAPER_TABLES = [
    "gu-table6", "gu-table10-tagging", "gu-table11-head", "gu-table12-re", "tinn-table3",
    "tinn-table4", "tinn-table5", "tinn-table6", "tinn-table7", "tinn-table8", "tinn-table9",
    "tinn-table9-biosses",
]


# --- seeds per task ---------------------------------------------------------------------------

def _study(seeds, tasks=("bc5chem", "biosses")):
    return {"models": ["m"], "tasks": list(tasks), "recipes": ["r"], "seeds": seeds}


def test_seeds_count_list_and_mapping():
    assert study_seeds(_study(3)) == [1, 2, 3]
    assert study_seeds(_study([4, 7]), "biosses") == [4, 7]
    mapping = _study({"default": 5, "biosses": 10})
    assert study_seeds(mapping, "bc5chem") == [1, 2, 3, 4, 5]
    assert study_seeds(mapping, "biosses") == list(range(1, 11))
    assert study_seeds(mapping) == list(range(1, 11))  # no task: the union over the tasks
    assert study_seeds(_study({"bc5chem": [2], "biosses": 1})) == [1, 2]
    with pytest.raises(ConfigError, match="no entry for task 'bc5chem'"):
        study_seeds(_study({"biosses": 10}), "bc5chem")


def test_seed_mapping_expands_each_task_with_its_own_seeds():
    config = {
        "models": {"m": {"hub_id": "org/m"}},
        "recipes": {"r": {"lr": [1e-5, 3e-5], "batch_size": 16}},
        "studies": {"s": _study({"default": 5, "biosses": 10})},
    }
    cells = expand_cells(config)
    assert len(cells) == 2 * (5 + 10)
    seeds = {task: sorted({c.seed for c in cells.values() if c.task == task})
             for task in ("bc5chem", "biosses")}
    assert seeds == {"bc5chem": [1, 2, 3, 4, 5], "biosses": list(range(1, 11))}


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        ({"default": 5, "gad": 10}, "studies.s.seeds.gad: not one of the study's tasks"),
        ({"biosses": 10}, "studies.s.seeds: no entry for task 'bc5chem'; add it or `default`"),
    ],
)
def test_bad_seed_mappings_are_named(seeds, message):
    config = {"models": {"m": {"hub_id": "org/m"}}, "recipes": {"r": {}},
              "studies": {"s": _study(seeds)}}
    with pytest.raises(ConfigError) as error:
        check_names(config)
    assert message in str(error.value)


# --- the paper studies ------------------------------------------------------------------------

def test_every_paper_table_has_a_study():
    assert list(CONFIG["studies"]) == PAPER_TABLES
    for name, study in CONFIG["studies"].items():
        assert study.get("title"), name
        assert study["baseline"] in study["recipes"], name
        study_layout(study)  # every table shows each dimension that varies


def test_seeds_are_10_for_the_small_tasks_and_5_otherwise():
    for name, study in CONFIG["studies"].items():
        for task in study["tasks"]:
            expected = list(range(1, 11 if task in SMALL_TASKS else 6))
            assert study_seeds(study, task) == expected, (name, task)


def test_standard_recipe_is_gus_grid_with_per_task_epochs():
    cells = expand_cells(CONFIG, ["gu-table6"])
    standard = {(c.options["lr"], c.options["batch_size"]) for c in cells.values()}
    assert standard == {(lr, bs) for lr in (1e-5, 3e-5, 5e-5) for bs in (16, 32)}
    epochs = {c.task: c.options["epochs"] for c in cells.values()}
    assert epochs["biosses"] > epochs["bc5chem"]
    models = {c.model for c in cells.values()}
    assert {"pubmedbert", "biobert", "scibert", "bluebert", "bert", "roberta"} <= models
    assert len({c.task for c in cells.values()}) == 13
    # 6 models x 6 hparams x (10 tasks x 5 seeds + 3 tasks x 10 seeds)
    assert len(cells) == 6 * 6 * (10 * 5 + 3 * 10)


def test_ablation_recipes_set_the_option_they_study():
    def options(study, recipe):
        cells = expand_cells(CONFIG, [study]).values()
        return next(c.options for c in cells if c.recipe == recipe)

    assert options("gu-table10-tagging", "tagging-bioul")["tagging"] == "BIOUL"
    assert options("gu-table10-tagging", "tagging-io")["tagging"] == "IO"
    assert options("gu-table11-head", "head-bilstm")["head"] == "bilstm"
    re_options = {(options("gu-table12-re", r)["re_input"], options("gu-table12-re", r)
                   ["re_pooling"]) for r in CONFIG["studies"]["gu-table12-re"]["recipes"]}
    assert re_options == {(i, p) for i in ("dummify", "markers", "original")
                          for p in ("cls", "mention", "entity_start")}
    improved = options("tinn-table3", "tinn-improved")
    assert improved["adam_bias_correction"] is True
    assert options("tinn-table3", "tinn-no-bias-correction")["adam_bias_correction"] is False
    assert options("tinn-table3", "tinn-standard-epochs")["epochs"] < improved["epochs"]
    assert options("tinn-table4", "tinn-freeze-half")["freeze_lower"] == "half"
    assert options("tinn-table4", "tinn-llrd-0.9")["layerwise_lr_decay"] == 0.9
    assert options("tinn-table4", "tinn-reinit-1")["reinit_top"] == 1
    assert {options("tinn-table5", r)["train_subsample"]
            for r in CONFIG["studies"]["tinn-table5"]["recipes"]} == {None, 100, 500, 1000}
    assert {options("tinn-table8", r)["remove_top"]
            for r in CONFIG["studies"]["tinn-table8"]["recipes"]} == {0, 2, 4, 6}
    final = options("tinn-table9-biosses", "tinn-biosses-train-dev")
    assert final["train_on"] == "train+dev" and final["select"] == "last"
    large = {m for s in ("tinn-table6", "tinn-table7") for m in CONFIG["studies"][s]["models"]}
    assert all(CONFIG["models"][m]["size"] == "large" for m in large)
    assert all(CONFIG["models"][m]["size"] == "base"
               for m in CONFIG["studies"]["tinn-table4"]["models"])


def test_train_dev_recipe_has_fixed_hyperparameters():
    # nothing is held out to select on, so the grid must be a single point
    cells = expand_cells(CONFIG, ["tinn-table9-biosses"]).values()
    assert len({c.hparams for c in cells if c.recipe == "tinn-biosses-train-dev"}) == 1


def test_every_study_table_renders_before_any_cell_ran():
    import pandas as pd

    from blurbflow.results.aggregate import COLUMNS, normalise_types

    empty = normalise_types(pd.DataFrame(columns=COLUMNS))
    for name, study in CONFIG["studies"].items():
        table = study_table(empty, name, study)
        assert (table.xs("n", axis=1, level="stat") == 0).all().all(), name


# --- the dry run ------------------------------------------------------------------------------

def test_dry_run_of_the_default_config_lists_every_studys_cells(tmp_path):
    workdir = copy_workflow(tmp_path)
    start = time.monotonic()
    # `all` first: `-q` takes the names after it as its own arguments
    run = snakemake(workdir, "all", "-n", "--quiet", "rules", timeout=300)
    seconds = time.monotonic() - start
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    stats = re.search(r"Job stats:\n(.*?)\n\n", run.stdout + run.stderr, re.S)
    assert stats, (run.stdout + run.stderr)[-3000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", stats.group(1), re.M))
    cells = expand_cells(CONFIG)
    assert int(counts["finetune"]) == len(cell_jobs(cells))
    per_study = {name: set(expand_cells(CONFIG, [name])) for name in CONFIG["studies"]}
    assert all(per_study.values()) and set().union(*per_study.values()) == set(cells)
    assert int(counts["report"]) == 1 and int(counts["tables"]) == 1
    print(f"dry run of {len(cells)} cells: {seconds:.1f} s (benchmarks/dag_scale.py measures)")


def test_config_is_not_changed_by_expansion():
    before = copy.deepcopy(CONFIG)
    expand_cells(CONFIG)
    assert CONFIG == before
