"""Cross-validation as a study dimension (Bio-LM: GAD and EU-ADR over Lee et al.'s 10 folds):
the fold tasks and their files (the mirror's real GAD, generated EU-ADR), the cells a study
expands to, the table entry (per seed the median over the evaluation folds) and a snakemake
run over the mirror's real GAD folds."""

from __future__ import annotations

import copy
import re
from collections import Counter

import pandas as pd
import pytest
import yaml
from test_data_download import MIRROR, mirror_url  # noqa: F401 (the loopback mirror fixture)

from blurbflow.config import cell_jobs, expand_cells
from blurbflow.config.grid import search_jobs
from blurbflow.data.fetch import fetch_source
from blurbflow.data.generate import generate_source
from blurbflow.data.parsers import parse_task
from blurbflow.results.tables import study_table
from blurbflow.tasks import get_task
from blurbflow.tasks.crossval import fold_tasks
from blurbflow.util.errors import ConfigError

from model_helpers import tiny_bert
from workflow_helpers import copy_workflow, planned_jobs, snakemake

needs_mirror = pytest.mark.skipif(
    not MIRROR.is_dir(), reason=f"{MIRROR} is absent: no real GAD folds here"
)
# (train, dev, test) per fold of the real GAD: dev = 535 lines held out of each train.tsv
GAD_COUNTS = {1: (4261, 535, 534), **{k: (4262, 535, 533) for k in range(2, 10)},
              10: (4263, 535, 532)}  # fmt: skip
# positive test sentences per fold
GAD_POSITIVE_TEST = {1: 281, **{k: 280 for k in range(2, 11)}}
RECIPES = {"biolm": {"lr": [1e-3, 3e-3], "batch_size": 16, "epochs": 3, "patience": 2}}


def config(**study) -> dict:
    base = {
        "models": ["m"], "tasks": ["gad", "chemprot"], "recipes": ["biolm"], "seeds": 2,
        "statistic": "median", "cross_validation": {"tasks": ["gad"], "tune_fold": 1},
    }  # fmt: skip
    return {
        "models": {"m": {"hub_id": "org/m"}},
        "recipes": copy.deepcopy(RECIPES),
        "studies": {"cv": {**base, **study}},
    }


def test_gad_and_euadr_have_ten_fold_tasks_and_gad_stays_blurbs_split():
    assert fold_tasks("gad") == [f"gad-fold{k}" for k in range(1, 11)]
    assert fold_tasks("euadr") == [f"euadr-fold{k}" for k in range(1, 11)]
    assert fold_tasks("chemprot") == []
    assert get_task("gad").options == {"train_lines": 4261}  # BLURB's GAD is unchanged
    fold = get_task("gad-fold7")
    assert (fold.sources, fold.metric, fold.options["fold"]) == (("gad",), "positive_f1", 7)
    assert get_task("euadr").sources == ("biobert-datasets",) and get_task("euadr").folds == 10


@pytest.mark.mirror
@needs_mirror
def test_fold_files_and_counts_per_fold_on_the_mirrors_real_gad(mirror_url, tmp_path):  # noqa: F811
    fetch_source("gad", tmp_path / "gad", mirror=mirror_url)
    counts, positive = {}, {}
    for k, task in enumerate(fold_tasks("gad"), start=1):
        frames = parse_task(task, tmp_path)
        counts[k] = tuple(len(frames[s]) for s in ("train", "dev", "test"))
        positive[k] = int((frames["test"]["label"] == "1").sum())
        assert (tmp_path / f"gad/GAD/{k}/test.tsv").is_file()
    assert counts == GAD_COUNTS and positive == GAD_POSITIVE_TEST
    blurb, fold1 = parse_task("gad", tmp_path), parse_task("gad-fold1", tmp_path)
    assert all(blurb[split].equals(fold1[split]) for split in blurb)


def test_euadr_folds_on_generated_files(tmp_path):
    generate_source("biobert-datasets", tmp_path / "biobert-datasets")
    counts = {
        task: tuple(len(f) for f in parse_task(task, tmp_path).values())
        for task in ["euadr", *fold_tasks("euadr")]
    }
    # 355 sentences, 35 or 36 a test fold; 36 of each train file's lines held out as dev
    assert counts["euadr"] == counts["euadr-fold1"] == (284, 36, 35)
    assert counts["euadr-fold2"] == (283, 36, 36) and counts["euadr-fold10"] == (284, 36, 35)
    assert sum(c[2] for task, c in counts.items() if task != "euadr") == 355
    with pytest.raises(Exception, match=r"datasets/RE/euadr/1/train.tsv.*file not found"):
        parse_task("euadr", tmp_path / "nothing")


def test_a_study_runs_ten_fold_cells_per_seed_the_tune_fold_searching():
    cells = expand_cells(config())
    gad = [c for c in cells.values() if c.task.startswith("gad")]
    per_seed = Counter(
        c.seed for c in gad if c.hparams == "selected" or c.hparams.startswith("lr0.001")
    )
    assert per_seed == {1: 10, 2: 10}  # 1 tune-fold cell per grid point + 9 evaluation folds
    assert Counter(c.task for c in gad)["gad-fold1"] == 2 * 2  # the grid on the tune fold
    assert not any(c.task == "gad" for c in cells.values())
    final = cells["results/cells/m/gad-fold4/biolm/selected/seed2"].options
    keys = ("lr", "train_on", "select", "patience", "hparams_task")
    assert {k: getattr(final, k) for k in keys} == {
        "lr": None, "train_on": "train+dev", "select": "last", "patience": None,
        "hparams_task": "gad-fold1",
    }  # fmt: skip
    assert final.selection_file == "results/selection/m/gad-fold1/biolm.json"
    searches = search_jobs(cell_jobs(cells))
    assert {p: sorted(j.path for j in jobs) for p, jobs in searches.items()} == {
        "results/selection/m/gad-fold1/biolm.json": [
            "results/cells/m/gad-fold1/biolm/lr0.001-bs16",
            "results/cells/m/gad-fold1/biolm/lr0.003-bs16",
        ]
    }
    tuned = expand_cells(config(cross_validation={"tasks": ["gad"], "tune_fold": 3}))
    assert {c.task for c in tuned.values() if c.hparams != "selected"} == {"gad-fold3", "chemprot"}


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"tasks": ["chemprot"]}, "cross_validation.tasks: 'chemprot' has no published folds"),
        ({"tasks": ["euadr"]}, "cross_validation.tasks: 'euadr' is not one of the study's tasks"),
        ({"tasks": ["gad"], "tune_fold": 11}, "cross_validation.tune_fold: 11 is not a fold of"),
        ({"tasks": ["gad"], "statistic": "max"}, "cross_validation.statistic: 'max' is not one"),
    ],
)
def test_bad_cross_validation_is_named_with_its_key_path(section, message):
    with pytest.raises(ConfigError, match=re.escape(f"studies.cv.{message}")):
        expand_cells(config(cross_validation=section))


def _cell(task, hparams, seed, dev, test, status="ok"):
    return {
        "model": "m", "task": task, "recipe": "biolm", "hparams": hparams, "seed": seed,
        "status": status, "dev": dev, "test": test, "chance_dev": 50.0, "chance_test": 50.0,
        "gpu_hours": 0.1, "wall_seconds": 60.0,
    }  # fmt: skip


def test_the_entry_is_per_seed_the_median_over_the_nine_evaluation_folds():
    rows = []
    for seed in (1, 2, 3):
        rows += [
            _cell("gad-fold1", "lr0.001-bs16", seed, 80.0, 99.0),  # tune fold: never shown
            _cell("gad-fold1", "lr0.003-bs16", seed, 70.0, 10.0),
        ]
        # folds 2..10 score 70 + fold + seed: median fold 6 → 76 + seed
        rows += [
            _cell(f"gad-fold{k}", "selected", seed, 90.0, 70.0 + k + seed) for k in range(2, 11)
        ]
    rows.append(_cell("gad", "lr0.001-bs16", 1, 10.0, 10.0))  # BLURB's split from another study
    rows.append(_cell("chemprot", "lr0.001-bs16", 1, 60.0, 61.0))
    study = config(seeds=3)["studies"]["cv"]
    table = study_table(pd.DataFrame(rows), "cv", study)
    gad = table.loc["gad"]["m / biolm"]
    assert (gad["median"], gad["mean"], gad["n"], gad["folds"]) == (78.0, 78.0, 3, 9)
    assert table.loc["chemprot"]["m / biolm"]["folds"] == 0
    mean_folds = study_table(
        pd.DataFrame(rows),
        "cv",
        {**study, "cross_validation": {"tasks": ["gad"], "statistic": "mean"}},
    ).loc["gad"]["m / biolm"]
    assert mean_folds["median"] == 78.0  # folds 2..10: mean = median here
    rows[4]["status"] = "diverged"  # seed 1, fold 4: the entry is the median of 8 folds
    fewer = study_table(pd.DataFrame(rows), "cv", study).loc["gad"]["m / biolm"]
    assert fewer["folds"] == 8 and fewer["median"] == 78.0 and fewer["n"] == 3
    plain = study_table(pd.DataFrame(rows), "cv", {**study, "cross_validation": None})
    assert "folds" not in plain.columns.get_level_values("stat")  # other studies: as before


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.mirror
@needs_mirror
def test_gad_over_its_ten_real_folds_end_to_end(mirror_url, tmp_path):  # noqa: F811
    workdir = copy_workflow(tmp_path / "wf")
    fetch_source("gad", tmp_path / "raw/gad", mirror=mirror_url)
    texts = parse_task("gad", tmp_path / "raw")["train"]["text"].tolist()
    model, _, tokenizer = tiny_bert(texts, 200)
    model.save_pretrained(workdir / "models/tiny")
    tokenizer.save_pretrained(workdir / "models/tiny")
    cfg = {
        "mirror": mirror_url,
        "models": {"tiny": {"path": "models/tiny", "size": "tiny"}},
        "tasks": {"gad": {"max_length": 64}},
        "recipes": {"biolm": {"lr": 3e-3, "batch_size": 16, "epochs": 2, "train_subsample": 160,
                              "adam_bias_correction": True, "eval_batch_size": 256}},
        "studies": {"cv": {"models": ["tiny"], "tasks": ["gad"], "recipes": ["biolm"],
                           "seeds": 2, "statistic": "median",
                           "cross_validation": {"tasks": ["gad"], "tune_fold": 1}}},
    }  # fmt: skip
    (workdir / "cv.yaml").write_text(yaml.safe_dump(cfg))
    target = "results/tables/cv.csv"
    run = snakemake(workdir, "--configfile", "cv.yaml", "--cores", "2", target, timeout=900)
    assert run.returncode == 0, run.stderr[-5000:]
    cells = pd.read_parquet(workdir / "results/cells.parquet")
    assert Counter(cells["seed"]) == {1: 10, 2: 10}  # 10 fold-cells per seed
    assert sorted(set(cells["task"])) == sorted(fold_tasks("gad"))
    assert set(cells["status"]) == {"ok"}, cells[["task", "status", "error"]]
    selection = yaml.safe_load(
        (workdir / "results/selection/tiny/gad-fold1/biolm.json").read_text()
    )
    final = cells[cells["task"] == "gad-fold5"]
    assert set(final["hparams"]) == {"selected"} and len(selection["options"]) > 0
    table = pd.read_csv(workdir / target, index_col=0)
    medians = [
        cells[(cells["seed"] == s) & (cells["task"] != "gad-fold1")]["test"].median()
        for s in (1, 2)
    ]
    assert table.loc["gad", "tiny / biolm:folds"] == 9
    assert table.loc["gad", "tiny / biolm:n"] == 2
    assert table.loc["gad", "tiny / biolm:median"] == pytest.approx(pd.Series(medians).median())
    again = snakemake(workdir, "--configfile", "cv.yaml", "-n", target)
    assert "finetune" not in planned_jobs(again.stdout)


def test_fine_tuning_times_count_every_fold_as_its_task():
    from blurbflow.results.stats import fine_tuning_times

    study = {
        "models": ["m"],
        "tasks": ["gad"],
        "recipes": ["r"],
        "seeds": 1,
        "cross_validation": {"tasks": ["gad"], "tune_fold": 1},
    }
    cells = pd.DataFrame(
        [
            {
                "model": "m",
                "task": f"gad-fold{k}",
                "recipe": "r",
                "seed": 1,
                "status": "ok",
                "wall_seconds": 10.0 * k,
                "epochs": "[]",
                "device": "cpu",
            }
            for k in range(1, 11)
        ]
    )
    (row,) = fine_tuning_times(cells, study).to_dict("records")
    assert (row["task"], row["runs"], row["total_seconds"]) == ("gad", 10, 550.0)
    assert row["median_seconds"] == 55.0
