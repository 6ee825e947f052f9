"""A study's `reference_models` (Gu et al. 2021): only they train the recipe's grid; every other
model trains the one point they chose on dev, after them, and follows a changed choice."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from test_hparams_from import dry_run, planned
from test_selection import frame

from blurbflow.config import cell_jobs, expand_cells
from blurbflow.config.grid import GRID_KEYS, search_jobs, with_selection
from blurbflow.results.handover import choose_on_reference
from blurbflow.results.study_cells import study_cells

from workflow_helpers import REPO, copy_workflow, fake_outputs

POINTS = ("lr0.001-bs8", "lr0.003-bs8")
CHOSEN = "on-ref"
SELECTION = "results/selection/reference/ref/biosses/grid.json"


def config() -> dict:
    return {
        "models": {m: {"hub_id": f"org/{m}"} for m in ("ref", "other")},
        "recipes": {"grid": {"epochs": 2, "lr": [1e-3, 3e-3], "batch_size": 8}},
        "studies": {
            "s": {
                "models": ["ref", "other"],
                "tasks": ["biosses"],
                "recipes": ["grid"],
                "seeds": 2,
                "reference_models": ["ref"],
            }
        },
    }


def test_only_the_reference_model_trains_the_grid_the_other_waits_on_its_choice():
    jobs = cell_jobs(expand_cells(config()))
    assert sorted(jobs) == [
        "results/cells/other/biosses/grid/on-ref",
        *(f"results/cells/ref/biosses/grid/{p}" for p in POINTS),
    ]
    other = jobs["results/cells/other/biosses/grid/on-ref"].options
    assert other.lr is None and other.batch_size is None and other.epochs == 2
    assert other.hparams_models == ("ref",) and other.selection_file == SELECTION
    sources = search_jobs(jobs)[SELECTION]  # the selection waits on the reference grid
    assert sorted(j.path for j in sources) == [
        f"results/cells/ref/biosses/grid/{p}" for p in POINTS
    ]


def test_a_model_whose_grid_another_study_trains_keeps_it():
    cfg = config()
    cfg["studies"]["t"] = {**cfg["studies"]["s"], "reference_models": None}
    del cfg["studies"]["t"]["reference_models"]
    jobs = cell_jobs(expand_cells(cfg))
    assert sorted(j for j in jobs if "/other/" in j) == [
        f"results/cells/other/biosses/grid/{p}" for p in POINTS
    ]


def cells(best: str):
    """The reference model's grid cells (dev best at `best`), and the other model's two seeds
    at the chosen point, with the options each job records."""
    rows = [
        ("ref", "biosses", "grid", point, seed, 80.0 if point == best else 70.0, 60.0)
        for point in POINTS
        for seed in (1, 2)
    ] + [("other", "biosses", "grid", CHOSEN, seed, 75.0, 65.0) for seed in (1, 2)]
    found = frame(rows)
    lr = {POINTS[0]: 1e-3, POINTS[1]: 3e-3}
    found["options"] = [
        json.dumps(
            {
                "lr": lr.get(h),
                "batch_size": 8,
                "reinit_top": 0,
                "freeze_lower": 0,
                "layerwise_lr_decay": None,
            }
        )
        for h in found["hparams"]
    ]
    return found


@pytest.mark.parametrize("best", POINTS)
def test_the_choice_follows_the_reference_results_and_the_table_shows_the_other_model(best):
    choice = choose_on_reference(cells(best)[lambda f: f["model"] == "ref"], ["ref"])
    assert choice["from"] == {"recipe": "grid", "hparams": best, "models": ["ref"]}
    assert set(choice["options"]) == set(GRID_KEYS)
    assert choice["options"]["lr"] == {POINTS[0]: 1e-3, POINTS[1]: 3e-3}[best]
    study = config()["studies"]["s"]
    shown = study_cells(cells(best), study)
    assert sorted(set(zip(shown["model"], shown["hparams"], strict=True))) == [
        ("other", CHOSEN),
        ("ref", best),
    ]


def test_the_other_model_trains_with_the_choice(tmp_path):
    options = expand_cells(config())["results/cells/other/biosses/grid/on-ref/seed1"].options
    choice = choose_on_reference(cells(POINTS[1])[lambda f: f["model"] == "ref"], ["ref"])
    (tmp_path / SELECTION).parent.mkdir(parents=True)
    (tmp_path / SELECTION).write_text(json.dumps(choice))
    trained = with_selection(options, tmp_path)
    assert (trained.lr, trained.batch_size, trained.epochs) == (3e-3, 8, 2)
    assert trained.selected_from == f"grid/{POINTS[1]}"
    bad = {**choice, "options": {**choice["options"], "epochs": 3}}
    (tmp_path / SELECTION).write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="expected"):
        with_selection(options, tmp_path)


@pytest.mark.slow  # runs snakemake
def test_dry_run_plans_reference_grid_then_choice_then_other_model(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    demo = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    demo["models"]["tiny-two"] = {**demo["models"]["tiny-biobert"]}
    demo["models"]["tiny-two"]["path"] = "resources/models/tiny-two"
    demo["recipes"]["standard"]["lr"] = [1e-3, 3e-3]
    study = demo["studies"]["demo"]
    study.update(models=["tiny-biobert", "tiny-two"], reference_models=["tiny-biobert"])
    (work / "final.yaml").write_text(yaml.safe_dump(demo))
    recipe = "standard"
    target = f"results/cells/tiny-two/biosses/{recipe}/on-tiny-biobert/seeds.json"
    summary = dry_run(work, target, "--summary")
    files = fake_outputs(work, summary)
    selection = f"results/selection/reference/tiny-biobert/biosses/{recipe}.json"
    assert selection in files
    assert not any(f.startswith("results/cells/tiny-two/") and "/lr" in f for f in files)
    assert "Nothing to be done" in dry_run(work, target)
    # a reference job that finished again: the choice is made again, then the other model
    reference = next(
        work / f
        for f in files
        if f.startswith("results/cells/tiny-biobert/biosses/") and f.endswith("seeds.json")
    )
    os.utime(reference, (1e9 + 10, 1e9 + 10))
    assert planned(dry_run(work, target)) == ["finetune/on-tiny-biobert", "select_reference/"]
