import json
import math
import statistics

import pandas as pd
import pytest

from blurbflow.results.aggregate import load_cells, select_hparams, write_cells
from blurbflow.results.tables import (
    baseline_tests,
    format_table,
    study_table,
    to_markdown,
    write_table,
)


def cell_path(root, model, task, recipe, hparams, seed):
    cell = root / "results" / "cells" / model / task / recipe / hparams
    return cell / f"seed{seed}" / "result.json"


def write_result(root, model, task, recipe, hparams, seed, dev, test, status="ok", **extra):
    path = cell_path(root, model, task, recipe, hparams, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "cell": {"model": model, "task": task, "recipe": recipe, "hparams": hparams, "seed": seed},
        "task_type": "ner", "metric": "entity_f1", "options": {"lr": 3e-5, "epochs": 3},
        "status": status, "error": None if status == "ok" else "loss became nan",
        "epochs": [{"epoch": 1, "train_loss": 0.5, "dev": dev, "test": test, "seconds": 1.0}],
        "selected_epoch": 1, "dev": dev, "test": test, "chance_dev": 0.0, "chance_test": 0.0,
        "wall_seconds": 60.0, "gpu_hours": 0.5, "peak_memory_mb": 1000.0, "device": "cpu",
        "versions": {"python": "3.11", "torch": "2.13.0"}, "git_commit": "abc123",
        "started": "2025-01-01T00:00:00", "finished": "2025-01-01T00:01:00", **extra,
    }
    path.write_text(json.dumps(result))
    return path


def test_load_cells_ok_missing_and_malformed(tmp_path):
    ok = write_result(tmp_path, "pubmedbert", "bc5chem", "standard", "lr3e-5", 1, 90.0, 89.0)
    missing = cell_path(tmp_path, "pubmedbert", "bc5chem", "standard", "lr3e-5", 2)
    malformed = cell_path(tmp_path, "pubmedbert", "bc5chem", "standard", "lr3e-5", 3)
    malformed.parent.mkdir(parents=True)
    malformed.write_text('{"cell": ')
    diverged = write_result(tmp_path, "pubmedbert", "bc5chem", "standard", "lr3e-5", 4,
                            None, None, status="diverged")

    frame = load_cells([ok, missing, malformed, diverged])

    assert list(frame["status"]) == ["ok", "missing", "failed", "diverged"]
    assert list(frame["seed"]) == [1, 2, 3, 4]
    assert set(frame["model"]) == {"pubmedbert"} and set(frame["task_type"]) == {"ner"}
    assert frame.loc[0, "test"] == 89.0 and frame.loc[0, "gpu_hours"] == 0.5
    assert json.loads(frame.loc[0, "options"]) == {"lr": 3e-5, "epochs": 3}
    assert json.loads(frame.loc[0, "epochs"])[0]["train_loss"] == 0.5
    assert json.loads(frame.loc[0, "versions"])["torch"] == "2.13.0"
    assert "no result" in frame.loc[1, "error"]
    assert "unreadable" in frame.loc[2, "error"] and str(malformed) in frame.loc[2, "error"]
    assert math.isnan(frame.loc[3, "test"]) and frame.loc[3, "error"] == "loss became nan"


def test_unknown_status_is_failed(tmp_path):
    path = write_result(tmp_path, "m", "gad", "r", "h", 1, 1.0, 1.0, status="weird")
    row = load_cells([path]).iloc[0]
    assert row["status"] == "failed" and "weird" in row["error"]


def test_write_cells_roundtrip(tmp_path):
    paths = [
        write_result(tmp_path, "m", "bc5chem", "r", "h", 1, 90.0, 89.0),
        cell_path(tmp_path, "m", "bc5chem", "r", "h", 2),
    ]
    frame = load_cells(paths)
    write_cells(frame, tmp_path / "results" / "cells.parquet")
    back = pd.read_parquet(tmp_path / "results" / "cells.parquet")
    assert list(back["status"]) == ["ok", "missing"]
    assert back.loc[0, "test"] == 89.0
    assert not list((tmp_path / "results").glob(".*.tmp"))


def frame_of(rows):
    """A cells frame from (model, task, recipe, hparams, seed, dev, test, status) tuples."""
    columns = ["model", "task", "recipe", "hparams", "seed", "dev", "test", "status"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["gpu_hours"] = 0.1
    return frame


def test_select_hparams_best_mean_dev_over_ok_seeds():
    frame = frame_of([
        # lr1: mean dev 80; lr3: 85 over ok seeds (its failed seed is ignored), so lr3 wins
        ("m", "gad", "r", "lr1", 1, 80.0, 70.0, "ok"),
        ("m", "gad", "r", "lr1", 2, 80.0, 70.0, "ok"),
        ("m", "gad", "r", "lr3", 1, 85.0, 75.0, "ok"),
        ("m", "gad", "r", "lr3", 2, 99.0, 75.0, "diverged"),
        ("m", "gad", "r", "lr3", 3, math.nan, math.nan, "missing"),
        # tie between "b" and "a": the first in sorted order ("a") wins
        ("m", "ddi", "r", "b", 1, 50.0, 1.0, "ok"),
        ("m", "ddi", "r", "a", 1, 50.0, 2.0, "ok"),
        # nothing ok: keep the first hparams so the failure stays visible
        ("m", "hoc", "r", "y", 1, math.nan, math.nan, "failed"),
        ("m", "hoc", "r", "x", 1, math.nan, math.nan, "failed"),
    ])
    selected = select_hparams(frame)
    chosen = selected.groupby("task")["hparams"].unique().map(list).to_dict()
    assert chosen == {"gad": ["lr3"], "ddi": ["a"], "hoc": ["x"]}
    assert len(selected[selected["task"] == "gad"]) == 3  # every seed of the chosen hparams


STUDY = {
    "title": "Recipes",
    "models": ["m"],
    "tasks": ["biosses", "bc5chem", "ncbidisease", "chemprot"],
    "recipes": ["base", "llrd"],
    "seeds": [1, 2, 3],
    "baseline": "base",
    "table": {"rows": "task", "columns": ["recipe"]},
}


def study_frame():
    rows = []
    tests = {
        ("bc5chem", "base"): [90.0, 92.0, 97.0], ("bc5chem", "llrd"): [91.0, 91.0, 91.0],
        ("ncbidisease", "base"): [80.0, 82.0, 84.0], ("ncbidisease", "llrd"): [86.0],
        ("chemprot", "base"): [70.0, 74.0, 75.0], ("chemprot", "llrd"): [77.0, 78.0, 79.0],
        ("biosses", "base"): [60.0, 70.0, 80.0], ("biosses", "llrd"): [85.0, 88.0, 91.0],
    }
    for (task, recipe), values in tests.items():
        for seed, value in enumerate(values, start=1):
            rows.append(("m", task, recipe, "h", seed, 50.0, value, "ok"))
    rows.append(("m", "ncbidisease", "llrd", "h", 2, math.nan, math.nan, "diverged"))
    rows.append(("m", "bc5chem", "base", "h", 4, 50.0, 0.0, "ok"))  # seed outside the study
    rows.append(("other", "bc5chem", "base", "h", 1, 50.0, 0.0, "ok"))  # model outside it
    return frame_of(rows)


def test_study_table_numbers_and_blurb_row():
    table = study_table(study_frame(), "recipes", STUDY)

    # rows: tasks in BLURB type order (ner, re, sts), then the BLURB row
    assert list(table.index) == [
        "bc5chem", "ncbidisease", "chemprot", "biosses", "BLURB (ner, re, sts)"
    ]
    base = table.loc["bc5chem", "base"]
    assert base["mean"] == pytest.approx(93.0)
    assert base["std"] == pytest.approx(statistics.stdev([90.0, 92.0, 97.0]))
    assert base["median"] == pytest.approx(92.0)
    assert base["n"] == 3
    one_seed = table.loc["ncbidisease", "llrd"]
    assert one_seed["n"] == 1 and one_seed["mean"] == 86.0 and math.isnan(one_seed["std"])

    # base: ner (93 + 82)/2 = 87.5, re 73, sts 70 -> 76.833...
    # llrd: ner (91 + 86)/2 = 88.5, re 78, sts 88 -> 84.833...
    blurb = "BLURB (ner, re, sts)"
    assert table.loc[blurb, ("base", "mean")] == pytest.approx((87.5 + 73 + 70) / 3)
    assert table.loc[blurb, ("llrd", "mean")] == pytest.approx((88.5 + 78 + 88) / 3)
    assert table.loc[blurb, ("llrd", "n")] == 1  # the weakest support among its tasks

    best = table.xs("best", axis=1, level="stat")
    assert best.loc["bc5chem"].to_dict() == {"base": True, "llrd": False}
    assert best.loc[blurb].to_dict() == {"base": False, "llrd": True}

    formatted = format_table(table)
    assert formatted.loc["bc5chem", "base"] == f"**93.0 ({statistics.stdev([90, 92, 97]):.1f})**"
    assert formatted.loc["ncbidisease", "llrd"] == "**86.0**"
    assert formatted.loc[blurb, "base"] == "76.8"


def test_study_table_counts_missing_entries_as_zero_seeds():
    study = {**STUDY, "recipes": ["base", "never-run"]}
    table = study_table(study_frame(), "s", study)
    assert (table.xs("n", axis=1, level="stat")["never-run"] == 0).all()
    assert math.isnan(table.loc["BLURB (ner, re, sts)", ("never-run", "mean")])
    assert format_table(table).loc["bc5chem", "never-run"] == "–"


def test_study_table_tasks_as_columns_gets_blurb_column():
    study = {**STUDY, "table": {"rows": "recipe", "columns": ["task"]}}
    table = study_table(study_frame(), "s", study)
    assert list(table.index) == ["base", "llrd"]
    assert table.loc["base", ("BLURB (ner, re, sts)", "mean")] == pytest.approx(
        (87.5 + 73 + 70) / 3
    )
    assert table.loc["llrd", ("biosses", "best")] and not table.loc["base", ("biosses", "best")]


def test_study_table_rejects_a_hidden_dimension():
    study = {**STUDY, "models": ["m", "other"]}
    with pytest.raises(ValueError, match="model"):
        study_table(study_frame(), "s", study)


def test_write_table_files(tmp_path):
    table = study_table(study_frame(), "recipes", STUDY)
    write_table(table, tmp_path / "tables" / "recipes")
    csv = pd.read_csv(tmp_path / "tables" / "recipes.csv", index_col=0)
    assert csv.loc["bc5chem", "base:mean"] == pytest.approx(93.0)
    assert csv.loc["bc5chem", "base:median"] == pytest.approx(92.0)
    assert csv.loc["bc5chem", "base:n"] == 3
    markdown = (tmp_path / "tables" / "recipes.md").read_text()
    assert markdown == to_markdown(table)
    assert "| task | base | llrd |" in markdown and "| bc5chem | **93.0 (3.6)** | 91.0 (0.0) |" in (
        markdown
    )
    tex = (tmp_path / "tables" / "recipes.tex").read_text()
    assert r"\textbf{93.0 (3.6)}" in tex and r"\begin{tabular}{lrr}" in tex


def test_baseline_tests_against_welch():
    from scipy.stats import ttest_ind

    tests = baseline_tests(study_frame(), STUDY).set_index("task")
    assert list(tests["recipe"].unique()) == ["llrd"]
    assert tests.loc["biosses", "delta"] == pytest.approx(18.0)
    assert tests.loc["biosses", "p_value"] == pytest.approx(
        ttest_ind([85, 88, 91], [60, 70, 80], equal_var=False).pvalue
    )
    assert math.isnan(tests.loc["ncbidisease", "p_value"])  # one llrd seed


def test_unreadable_path_is_kept_as_a_row(tmp_path):
    frame = load_cells([tmp_path / "elsewhere" / "result.json"])
    assert list(frame["status"]) == ["missing"] and frame.loc[0, "model"] is None
    assert len(select_hparams(frame)) == 1
