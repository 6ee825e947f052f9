"""A recipe that takes its hyperparameters from a search (`hparams_from`, Tinn et al. 2023's
BIOSSES final model on train+dev): expansion, the choice on dev, a real final job that trains
with the selected setting and retrains only when the selection changes, verification by
aggregation, and the workflow's DAG edge search → selection → final model."""

from __future__ import annotations

import copy
import json
import os
import re

import pytest
import yaml
from test_recipes import FRAMES, SIZES, build_tiny, encode
from test_selection import frame

from blurbflow.config import cell_jobs, expand_cells
from blurbflow.config.grid import SELECTED_KEYS, search_jobs, with_selection
from blurbflow.results.aggregate import aggregate
from blurbflow.results.handover import choose_setting, select_for_final
from blurbflow.results.tables import study_table
from blurbflow.train.job import run_cell_job
from blurbflow.util.errors import ConfigError

from workflow_helpers import REPO, copy_workflow, fake_outputs, snakemake

RECIPES = {
    "base": {"epochs": 2, "adam_bias_correction": True},
    "search": {"extends": "base", "lr": [1e-3, 3e-3], "batch_size": 8, "reinit_top": [0, 1]},
    "deep": {"extends": "base", "lr": 1e-3, "batch_size": 16, "reinit_top": 2, "epochs": 3},
    "final": {"extends": "base", "train_on": "train+dev", "hparams_from": ["search", "deep"]},
}


def config(models=None, **study) -> dict:
    base = {
        "models": ["m"],
        "tasks": ["biosses"],
        "recipes": ["search", "deep", "final"],
        "seeds": 2,
    }
    return {
        "models": models or {"m": {"hub_id": "org/m"}},
        "recipes": copy.deepcopy(RECIPES),
        "studies": {"s": {**base, **study}},
    }


def test_final_recipe_runs_once_in_selected_with_its_setting_unknown():
    cells = expand_cells(config())
    final = {p: c for p, c in cells.items() if c.recipe == "final"}
    assert sorted(final) == [f"results/cells/m/biosses/final/selected/seed{s}" for s in (1, 2)]
    options = next(iter(final.values())).options
    assert {
        k: getattr(options, k) for k in ("lr", "batch_size", "reinit_top", "layerwise_lr_decay")
    } == {
        "lr": None,
        "batch_size": None,
        "reinit_top": None,
        "layerwise_lr_decay": None,
    }
    assert options.epochs == 3  # the searches' largest budget: the job's resource bound
    assert options.hparams_from == ("search", "deep") and options.select == "last"
    assert options.selection_file == "results/selection/m/biosses/final.json"
    assert len(cells) == 2 * (4 + 1 + 1)
    searches = search_jobs(cell_jobs(cells))
    assert {p: sorted(j.path.rsplit("/", 2)[1] for j in jobs) for p, jobs in searches.items()} == {
        "results/selection/m/biosses/final.json": ["deep", "search", "search", "search", "search"]
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hparams_from": "nope"}, "unknown recipe 'nope'"),
        ({"hparams_from": "final"}, "cannot take its hyperparameters from itself"),
        ({"dropout": 0.2}, "'search' differs in dropout 0.1 vs 0.2"),
    ],
)
def test_bad_hparams_from_is_named(change, message):
    bad = config()
    bad["recipes"]["final"].update(change)
    with pytest.raises(ConfigError, match=re.escape(message)):
        expand_cells(bad)


def test_a_chain_and_a_search_no_study_runs_are_named():
    chained = config()
    chained["recipes"]["again"] = {"extends": "base", "hparams_from": "final"}
    with pytest.raises(ConfigError, match="'final' takes its own hyperparameters from a search"):
        expand_cells(chained)
    alone = config(recipes=["final"])
    with pytest.raises(ConfigError, match=r"studies.s: recipe 'final' .* no study runs for m on"):
        expand_cells(alone)


def test_the_choice_is_the_best_point_of_the_best_recipe_and_the_median_best_epoch():
    cells = frame(
        [
            ("m", "biosses", "search", "lr0.001-bs8-reinit1", 1, 80.0, 70.0),
            ("m", "biosses", "search", "lr0.001-bs8-reinit1", 2, 84.0, 71.0),
            ("m", "biosses", "search", "lr0.003-bs8-reinit0", 1, 90.0, 60.0),
            ("m", "biosses", "search", "lr0.003-bs8-reinit0", 2, 60.0, 60.0),
            ("m", "biosses", "deep", "lr0.001-bs16-reinit2", 1, 81.0, 75.0),
            ("m", "biosses", "deep", "lr0.001-bs16-reinit2", 2, 81.0, 75.0),
        ]
    )
    point = {
        "lr": 1e-3,
        "batch_size": 8,
        "reinit_top": 1,
        "layerwise_lr_decay": None,
        "freeze_lower": 0,
        "epochs": 20,
    }
    cells["options"] = [json.dumps(point)] * len(cells)
    cells["selected_epoch"] = [3, 6, 1, 1, 2, 2]
    selection = choose_setting(cells, ["search", "deep"])
    assert selection == {
        "from": {"recipe": "search", "hparams": "lr0.001-bs8-reinit1"},
        "options": {**point, "epochs": 5},  # median of 3 and 6, rounded up
    }
    cells["status"] = "failed"
    with pytest.raises(ValueError, match="no finished cell of search, deep"):
        choose_setting(cells, ["search", "deep"])


# --- a real search, selection and final job on a tiny BERT ------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory, request):
    """A project folder with a tiny model, biosses data and tokenized inputs."""
    root = tmp_path_factory.mktemp("final")
    build_tiny("bert", root / "models" / "bert")
    folder = root / "data" / "biosses"
    folder.mkdir(parents=True)
    for k, (split, n) in enumerate(SIZES.items()):
        FRAMES["biosses"](split, n, k).to_parquet(folder / f"{split}.parquet")
    return root


def run_jobs(root, cfg, recipes):
    """Run the config's jobs of `recipes` as the workflow would (cwd = project root)."""
    encoded = encode(root, "biosses")
    statuses = {}
    for path, job in cell_jobs(expand_cells(cfg)).items():
        if job.recipe in recipes:
            statuses[path] = run_cell_job(
                job.options,
                list(job.seeds),
                encoded,
                root / "data/biosses",
                root / path / "seeds.json",
            )
    return statuses


@pytest.mark.slow  # runs snakemake or trains for long; `make test-fast` leaves it out
def test_final_job_trains_with_the_selection_and_retrains_only_when_it_changes(
    project, monkeypatch, capsys
):
    monkeypatch.chdir(project)
    cfg = config({"m": {"path": str(project / "models/bert")}}, seeds=1)
    cfg["tasks"] = {"biosses": {"max_length": 64}}
    cfg["studies"]["s"]["table"] = {"rows": "task", "columns": ["recipe"]}
    run_jobs(project, cfg, {"search", "deep"})
    jobs = search_jobs(cell_jobs(expand_cells(cfg)))["results/selection/m/biosses/final.json"]
    # as the select_hparams rule's params carry them: the jobs' serialised options
    sources = [
        {"job": j.path, "options": j.options.to_dict(), "seeds": list(j.seeds)} for j in jobs
    ]
    out = "results/selection/m/biosses/final.json"
    selection = select_for_final(sources, ["search", "deep"], out)
    assert json.loads((project / out).read_text()) == selection
    assert set(selection["options"]) == set(SELECTED_KEYS)

    run_jobs(project, cfg, {"final"})
    result = json.loads(
        (project / "results/cells/m/biosses/final/selected/seed1/result.json").read_text()
    )
    for key, value in selection["options"].items():
        assert result["options"][key] == value
    assert result["selection"] == "last" and len(result["epochs"]) == selection["options"]["epochs"]
    assert result["train_instances"] == SIZES["train"] + SIZES["dev"]
    cells = aggregate(cfg, project)
    assert (cells["status"] == "ok").all(), cells[["recipe", "status", "error"]]
    table = study_table(cells, "s", cfg["studies"]["s"])
    assert "final" in table.to_string()

    capsys.readouterr()
    run_jobs(project, cfg, {"final"})  # the same selection: the seed is kept
    assert "seed 1: kept" in capsys.readouterr().out

    other = {**selection["options"], "lr": 2e-3, "epochs": 1}
    (project / out).write_text(json.dumps({**selection, "options": other}))
    cells = aggregate(cfg, project, drop=False)
    error = cells.loc[cells["recipe"] == "final", "error"].iloc[0]
    assert error.startswith("rejected: its options differ from the config's:") and "lr" in error
    run_jobs(project, cfg, {"final"})  # a changed selection: retrained with it
    assert "seed 1: training (its options differ" in capsys.readouterr().out
    result = json.loads(
        (project / "results/cells/m/biosses/final/selected/seed1/result.json").read_text()
    )
    assert result["options"]["lr"] == 2e-3 and len(result["epochs"]) == 1


def test_a_final_job_without_its_selection_names_the_step(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    options = expand_cells(config())["results/cells/m/biosses/final/selected/seed1"].options
    with pytest.raises(FileNotFoundError, match="run the `select_hparams` step"):
        with_selection(options)
    assert with_selection(options, missing_ok=True) is options


# --- the workflow's DAG edge ------------------------------------------------------------------


def dry_run(work, target, *args):
    run = snakemake(work, "--configfile", "final.yaml", "-n", "--cores", "1", *args, target)
    assert run.returncode == 0, run.stderr
    return run.stdout + run.stderr


def planned(output: str) -> list[str]:
    """'rule/hparams' of each job a dry run lists."""
    jobs = re.findall(r"rule (\w+):\n(?:.*\n)*?\s+wildcards: ([^\n]*)", output)
    return sorted(
        f"{rule}/{dict(w.split('=') for w in wc.split(', ')).get('hparams', '')}"
        for rule, wc in jobs
    )


@pytest.mark.slow  # runs snakemake or trains for long; `make test-fast` leaves it out
def test_dry_run_plans_search_then_selection_then_final_model(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    demo = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    demo["recipes"]["final"] = {
        "extends": "standard",
        "train_on": "train+dev",
        "hparams_from": "standard",
    }
    demo["studies"]["demo"]["recipes"].append("final")
    (work / "final.yaml").write_text(yaml.safe_dump(demo))
    target = "results/cells/tiny-biobert/biosses/final/selected/seeds.json"
    # every output present and equally old: nothing to do; a newer search manifest re-selects
    # and re-runs the final model (the edges search -> selection -> final), a newer selection
    # re-runs the final model only
    files = fake_outputs(work, dry_run(work, target, "--summary"))
    assert "results/selection/tiny-biobert/biosses/final.json" in files
    assert "Nothing to be done" in dry_run(work, target)
    search = work / "results/cells/tiny-biobert/biosses/standard/lr0.001-bs16/seeds.json"
    os.utime(search, (1e9 + 10, 1e9 + 10))
    assert planned(dry_run(work, target)) == ["finetune/selected", "select_hparams/"]
    os.utime(search, (1e9, 1e9))
    selection = work / "results/selection/tiny-biobert/biosses/final.json"
    os.utime(selection, (1e9 + 10, 1e9 + 10))
    assert planned(dry_run(work, target)) == ["finetune/selected"]
