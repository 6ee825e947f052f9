"""The demo end to end through snakemake (one shared run: the `demo` fixture in conftest.py),
then the stale-only re-run rules."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
import yaml

from workflow_helpers import planned_jobs, snakemake

pytestmark = pytest.mark.e2e
DEMO_CELLS = 20


def _dry_run(workdir, configfile):
    run = snakemake(workdir, "-n", "--configfile", configfile)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout + run.stderr


def _variant(workdir, name, edit):
    config = yaml.safe_load((workdir / "config/demo.yaml").read_text())
    edit(config)
    path = workdir / "config" / name
    path.write_text(yaml.safe_dump(config))
    return f"config/{name}"


def test_demo_produces_report_with_table_and_blurb_score(demo):
    cells = pd.read_parquet(demo / "results/cells.parquet")
    assert len(cells) == DEMO_CELLS
    assert set(cells["status"]) == {"ok"}, cells[["task", "status", "error"]]
    assert set(cells["task"]) == {"ncbidisease", "gad", "biosses", "hoc", "pubmedqa"}
    html = (demo / "results/report.html").read_text()
    assert "BLURB" in html and "layer-specific" in html and "ncbidisease" in html
    # what the head read and the attention that ran, off the cells (report/heads.py)
    assert re.search(
        r"Heads: linear reading the pooler \(tiny-biobert\); attention: \w+ \(tiny-biobert\)\.",
        html,
    ), html.split('class="muted heads">')[1][:300]
    assert set(cells["head"]) == {"linear"} and cells["attn_implementation"].notna().all()
    table = (demo / "results/tables/demo.md").read_text()
    assert "BLURB" in table
    beside = pd.read_csv(demo / "results/tables/demo.reproduction.csv")  # the paper's beside ours
    assert len(beside) == 12 and beside["published"].notna().sum() == 11
    for cell in cells.itertuples():
        assert (
            demo / f"results/cells/{cell.model}/{cell.task}/{cell.recipe}/{cell.hparams}"
            f"/seed{cell.seed}/predictions.parquet"
        ).exists()


def test_demo_writes_its_study_results_beside_the_table(demo):
    """results/demo.json holds the table's numbers: per column and task the seeds' mean, and
    the BLURB-style score (blurbflow.results.study_json)."""
    from blurbflow.results.tables import study_table, table_entries

    study = yaml.safe_load((demo / "config/demo.yaml").read_text())["studies"]["demo"]
    results = json.loads((demo / "results/demo.json").read_text())
    columns = [(c["model"], c["recipe"]) for c in results["columns"]]
    assert columns == [("tiny-biobert", "standard"), ("tiny-biobert", "layer-specific")]
    table = table_entries(
        study_table(pd.read_parquet(demo / "results/cells.parquet"), "demo", study)
    )
    for column in results["columns"]:
        label = f"{column['model']} / {column['recipe']}"
        for task, entry in column["tasks"].items():
            assert entry["n"] == 2 and len(entry["scores"]) == 2, (label, task)
            assert entry["mean"] == pytest.approx(table[(task, label)]["mean"]), (label, task)
        blurb = column["blurb"]
        assert blurb["mean"] == pytest.approx(table[(blurb["label"], label)]["mean"])
    assert len(results["config_hash"]) == 64 and results["versions"]["blurbflow"]


def test_every_demo_model_beats_chance_on_dev(demo):
    cells = pd.read_parquet(demo / "results/cells.parquet")
    for cell in cells[cells["task"].isin(["ncbidisease", "gad"])].itertuples():
        assert cell.dev > cell.chance_dev + 5, (
            cell.task,
            cell.recipe,
            cell.seed,
            cell.dev,
            cell.chance_dev,
        )
    means = cells.groupby("task")[["dev", "chance_dev"]].mean()
    assert (means["dev"] > means["chance_dev"]).all(), means


@pytest.mark.parametrize("finished", ["demo", "tiny_run"])
def test_ok_jobs_log_no_traceback_and_each_seed_logs_its_own_model_load(finished, request):
    """Every seed's train.log holds its own model-load report (transformers' logging, one per
    training), and no job that finished ok shows a traceback or a logging error in its log."""
    workdir = request.getfixturevalue(finished)
    manifests = sorted((workdir / "results/cells").glob("*/*/*/*/seeds.json"))
    assert manifests
    for manifest in manifests:
        job = manifest.parent.relative_to(workdir / "results/cells")
        log = (workdir / "results/logs/cells" / f"{job}.log").read_text()
        assert "Traceback" not in log and "Logging error" not in log, (job, log[-3000:])
        seeds = json.loads(manifest.read_text())["seeds"]
        assert set(seeds.values()) == {"ok"}, (job, seeds)
        for seed in seeds:
            seed_log = (manifest.parent / f"seed{seed}/train.log").read_text()
            trainings = len(re.findall(r"^== ", seed_log, re.M))
            assert seed_log.count("LOAD REPORT") == trainings >= 1, (job, seed, seed_log)
            assert f"seed {seed}: ok" in seed_log and "Logging error" not in seed_log


def test_second_run_trains_nothing(demo):
    output = _dry_run(demo, "config/demo.yaml")
    assert "Nothing to be done" in output, planned_jobs(output)


AGGREGATION = {"aggregate", "tables", "report", "all"}


def common_study(config: dict) -> dict:
    """The demo study choosing one epoch for every seed: the same cells, another selection."""
    study = {**config["studies"]["demo"], "select": "common_epoch"}
    del study["published"]
    return study


def test_a_common_epoch_study_reports_every_seed_at_the_best_mean_dev_epoch(demo):
    """`select: common_epoch` on the demo's own cells: each entry's seeds report their test at
    the epoch of the best mean dev over them, read off the evaluations their result.json
    recorded (blurbflow.results.common_epoch); that it trains nothing, the dry run below."""
    from blurbflow.results.study_cells import seed_scores, study_cells
    from blurbflow.results.tables import study_table

    cells = pd.read_parquet(demo / "results/cells.parquet")
    study = common_study(yaml.safe_load((demo / "config/demo.yaml").read_text()))
    scores = seed_scores(study_cells(cells, study))
    table = study_table(cells, "common", study)
    for (_, task, recipe), group in cells.groupby(["model", "task", "recipe"]):
        curves = [json.loads(e) for e in group.sort_values("seed")["epochs"]]
        mean_dev = [sum(c[i]["dev"] for c in curves) / len(curves) for i in range(len(curves[0]))]
        best = mean_dev.index(max(mean_dev))
        assert scores[("tiny-biobert", task, recipe)] == [c[best]["test"] for c in curves]
        assert table.loc[task, (f"tiny-biobert / {recipe}", "epoch")] == best + 1


def _requeued_cells(demo, name, edit) -> list[str]:
    """The cells a dry run of an edited demo config plans; asserts nothing else but the
    aggregation steps is planned with them."""
    jobs = planned_jobs(_dry_run(demo, _variant(demo, name, edit)))
    finetuned = jobs.pop("finetune")
    assert set(jobs) <= AGGREGATION, jobs
    return finetuned


def test_changing_one_recipe_option_requeues_only_that_recipe(demo):
    def edit(config):
        config["recipes"]["layer-specific"]["layerwise_lr_decay"] = 0.9
        config["studies"]["common"] = common_study(config)  # the same cells: it adds none

    jobs = _requeued_cells(demo, "changed.yaml", edit)
    assert len(jobs) == 5 and all("/layer-specific/" in out for out in jobs)


def test_adding_a_seed_trains_only_the_new_seed(demo):
    def edit(config):
        config["studies"]["demo"]["seeds"] = 3

    configfile = _variant(demo, "seed3.yaml", edit)
    assert len(_requeued_cells(demo, "seed3.yaml", edit)) == 10  # every job: its seeds changed
    job = demo / "results/cells/tiny-biobert/biosses/standard/lr0.001-bs16"  # seconds a seed
    before = {seed: (job / f"seed{seed}/result.json").read_bytes() for seed in (1, 2)}
    target = str((job / "seeds.json").relative_to(demo))
    run = snakemake(demo, "--configfile", configfile, "--cores", "2", target)
    assert run.returncode == 0, run.stderr[-3000:]
    for seed in (1, 2):  # kept byte for byte: not retrained
        assert (job / f"seed{seed}/result.json").read_bytes() == before[seed]
    log = (demo / "results/logs/cells/tiny-biobert/biosses/standard/lr0.001-bs16.log").read_text()
    assert "seed 1: kept (ok" in log and "seed 2: kept (ok" in log and "seed 3: ok" in log
    assert json.loads((job / "seed3/result.json").read_text())["status"] == "ok"
