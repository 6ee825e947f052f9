"""Adaptive seeds in the workflow (issue 22; docs/seeds.md "In the workflow"): the rounds run by
themselves under `snakemake all`, a comparison decided early (an obvious difference, an obvious
equivalence) leaves its cells at `start` seeds while an open one grows to `max`, a second run
trains nothing, and a bad plan stops before any job, naming its key path."""

from __future__ import annotations

import copy
import csv
import json

import pytest
import yaml

from blurbflow.config import expand_cells
from blurbflow.config.study_plan import study_seeds
from blurbflow.config.validate import check_config
from blurbflow.results.rounds import final_seeds, planned_seeds
from blurbflow.util.errors import ConfigError

from tiny_project import MODEL, TASK, tiny_config, tiny_project, write_config
from workflow_helpers import REPO, snakemake

ARGS = ("--configfile", "config/tiny.yaml", "--cores", "2")
PLAN = {"start": 2, "step": 1, "max": 3, "delta": 0.5, "futility": 0.0}
EASY = "gad"  # the tiny model learns its cue phrases in 2 epochs: F1 ~95 on every seed


def adaptive_config(tasks=(TASK,), **plan) -> dict:
    """base (the baseline), broken and quick, the same training under three names. With
    FAULTS, every seed of base and broken diverges and counts at chance: broken against base
    is decided at once (equal scores, no spread). On biosses quick learns a little, with a
    spread between seeds: against base it cannot be decided on 2 seeds (1 degree of freedom),
    so it runs to max. On EASY quick is far above chance with (almost) no spread: different
    from base at once."""
    config = tiny_config()
    config["models"][MODEL]["corpus_tasks"] = list(tasks)
    recipe = {"lr": 1e-3, "epochs": 2}  # the injected NaN comes in epoch 2
    config["recipes"] = {"base": recipe, "broken": recipe, "quick": recipe}
    config["studies"] = {
        "s": {
            "title": "s",
            "models": [MODEL],
            "tasks": list(tasks),
            "recipes": ["base", "broken", "quick"],
            "baseline": "base",
            "seeds": {"adaptive": {**PLAN, **plan}},
        }
    }
    return config


FAULTS = {"BLURBFLOW_FAULT": "nan@*/base/*;nan@*/broken/*"}


def test_cells_start_at_start_and_the_study_allows_up_to_max():
    config = adaptive_config()
    cells = expand_cells(config)
    assert sorted({c.seed for c in cells.values()}) == [1, 2]
    more = expand_cells(config, adaptive={(MODEL, TASK, "quick"): 3})
    assert sorted(c.seed for c in more.values() if c.recipe == "quick") == [1, 2, 3]
    assert study_seeds(config["studies"]["s"], TASK) == [1, 2, 3]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"plan": {"start": 4}}, "studies.s.seeds.adaptive.start: 4 is above max 3"),
        ({"plan": {"step": 0}}, "studies.s.seeds.adaptive.step: 0; at least 1 seed a round"),
        ({"plan": {"delta": 0}}, "studies.s.seeds.adaptive.delta: 0; the equivalence margin"),
        ({"baseline": None, "recipes": ["base"]}, "studies.s.seeds.adaptive: the study compares"),
        ({"choose": {"best": ["broken", "quick"]}}, "studies.s.seeds.adaptive: not with `choose`"),
    ],
)
def test_a_bad_plan_stops_naming_its_key_path(change, message):
    config = adaptive_config(**change.pop("plan", {}))
    study = config["studies"]["s"]
    study.update(change)
    if study["baseline"] is None:
        del study["baseline"]
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        expand_cells(config)


def test_an_adaptive_cell_run_by_another_study_stops():
    config = adaptive_config()
    other = copy.deepcopy(config["studies"]["s"])
    config["studies"]["fixed"] = {**other, "seeds": 2}
    with pytest.raises(ConfigError, match=r"also run by fixed; an adaptive study's cells"):
        expand_cells(config)


@pytest.mark.slow
def test_the_workflow_stops_on_a_bad_plan_before_any_job(tmp_path):
    workdir = tiny_project(tmp_path)
    write_config(workdir, adaptive_config(start=5))
    run = snakemake(workdir, *ARGS, "-n", "all")
    assert run.returncode != 0
    assert "studies.s.seeds.adaptive.start: 5 is above max 3" in run.stderr + run.stdout
    assert not (workdir / "results").exists()


def _job(recipe: str, task: str = TASK) -> str:
    return f"results/cells/{MODEL}/{task}/{recipe}/lr0.001-bs16"


def _files(workdir) -> dict:
    return {p: p.stat().st_mtime_ns for p in (workdir / "results/cells").rglob("*") if p.is_file()}


@pytest.mark.e2e
def test_rounds_run_until_decided_and_a_second_run_trains_nothing(tmp_path):
    workdir = tiny_project(tmp_path)
    # 3 seeds to start: with 2, a difference has 1 degree of freedom, and the first look's
    # nominal level (0.0018) asks for a t above 350 even where every seed is far above chance
    write_config(workdir, adaptive_config(tasks=(TASK, EASY), start=3, max=4))
    first = snakemake(workdir, *ARGS, "all", env=FAULTS)
    assert first.returncode == 0, first.stderr[-3000:]
    rounds = sorted((workdir / "results/adaptive/s").glob("round*.json"))
    assert [p.name for p in rounds] == ["round1.json", "round2.json"]
    one, two = (json.loads(p.read_text()) for p in rounds)
    cell = {r: f"{MODEL}/{TASK}/{r}" for r in ("base", "broken", "quick")}
    easy = {r: f"{MODEL}/{EASY}/{r}" for r in ("base", "broken", "quick")}
    outcomes = {c["id"]: c["outcome"] for c in one["comparisons"]}
    assert outcomes == {
        f"{cell['broken']} vs {cell['base']}": "equivalent",  # obvious: decided at `start`
        f"{cell['quick']} vs {cell['base']}": "continue",
        f"{easy['broken']} vs {easy['base']}": "equivalent",
        f"{easy['quick']} vs {easy['base']}": "different",  # obvious: decided at `start`
    }
    obvious = {c["id"]: c for c in one["comparisons"]}[f"{easy['quick']} vs {easy['base']}"]
    assert obvious["look"] == 1 and obvious["n_a"] == obvious["n_b"] == 3
    assert obvious["difference"] > 20  # F1 points above chance
    assert not one["done"] and two["done"]
    final = {c["id"]: c for c in two["comparisons"]}[f"{cell['quick']} vs {cell['base']}"]
    assert final["look"] == 2 and final["outcome"] != "continue" and final["n_a"] == 4
    assert two["seeds"] == {
        cell["base"]: 4,
        cell["broken"]: 3,
        cell["quick"]: 4,  # not obvious: more seeds
        **dict.fromkeys(easy.values(), 3),  # obvious: `start` seeds
    }
    seeds = {r: sorted(p.name for p in (workdir / _job(r)).glob("seed[0-9]*")) for r in cell}
    assert seeds == {
        "base": ["seed1", "seed2", "seed3", "seed4"],
        "broken": ["seed1", "seed2", "seed3"],  # fewer seeds where the comparison was obvious
        "quick": ["seed1", "seed2", "seed3", "seed4"],
    }
    trained = {
        r: sorted(p.name for p in (workdir / _job(r, EASY)).glob("seed[0-9]*")) for r in easy
    }
    assert trained == dict.fromkeys(easy, ["seed1", "seed2", "seed3"])
    manifest = json.loads((workdir / _job("quick") / "seeds.json").read_text())
    assert sorted(manifest["seeds"]) == ["1", "2", "3", "4"]
    with (workdir / "results/tables/s.comparisons.csv").open() as table:
        rows = {(r["task"], r["recipe"]): r for r in csv.DictReader(table) if r["kind"] == "recipe"}
    # every seed the rounds trained is counted (base's diverged: runs, not n)
    counts = {key: (r["n"], r["runs_reference"]) for key, r in rows.items() if key[1] == "quick"}
    assert counts == {(TASK, "quick"): ("4", "4"), (EASY, "quick"): ("3", "3")}
    report = (workdir / "results/report.html").read_text()
    assert f"Adaptive seeds: start 3, step 1, max 4, ±0.5 ({TASK}, {EASY})" in report

    before = _files(workdir)
    second = snakemake(workdir, *ARGS, "all", env=FAULTS)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Nothing to be done" in second.stdout + second.stderr
    assert _files(workdir) == before

    # a lost result: the stat check re-runs that job's rounds, which retrain only that seed
    (workdir / _job("quick") / "seed4/result.json").unlink()
    third = snakemake(workdir, *ARGS, "all", env=FAULTS)
    assert third.returncode == 0, third.stderr[-3000:]
    logs = sorted((workdir / f"results/logs/cells/{MODEL}/{TASK}/quick").glob("*.n*.log"))
    trained = [line for p in logs for line in p.read_text().splitlines() if ": training" in line]
    assert trained == ["seed 4: training (no result.json)"]
    assert (workdir / _job("quick") / "seed4/result.json").exists()


def test_a_failed_runs_report_counts_the_seeds_the_latest_round_asks_for(tmp_path):
    config = adaptive_config()
    folder = tmp_path / "results/adaptive/s"
    folder.mkdir(parents=True)
    cell = f"{MODEL}/{TASK}/quick"
    for k, (seeds, following) in enumerate([(2, 3), (3, 4)], start=1):
        record = {"seeds": {cell: seeds}, "next": {cell: following}, "done": False}
        (folder / f"round{k}.json").write_text(json.dumps(record))
    assert planned_seeds(config, tmp_path) == {(MODEL, TASK, "quick"): 4}
    assert final_seeds([folder / "round1.json"]) == {(MODEL, TASK, "quick"): 2}


def test_the_schema_and_checks_take_adaptive_seeds_per_task_beside_fixed_ones():
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    config = adaptive_config()
    config["studies"]["s"]["tasks"] = [TASK, "gad"]
    # a copy of PLAN: it is mutated below, and other tests (test_adaptive_slurm) read PLAN
    config["studies"]["s"]["seeds"] = {"default": 4, TASK: {"adaptive": dict(PLAN)}}
    check_config(copy.deepcopy(config), schema)
    cells = expand_cells(config)
    assert {(c.task, c.seed) for c in cells.values()} == {
        *((TASK, s) for s in (1, 2)),
        *(("gad", s) for s in (1, 2, 3, 4)),
    }
    config["studies"]["s"]["seeds"][TASK]["adaptive"]["alpha"] = 0.7
    with pytest.raises(ConfigError, match=r"^studies\.s\.seeds"):
        check_config(config, schema)
