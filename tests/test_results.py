import json
import math
import statistics

import pandas as pd
import pytest
from results_helpers import load_cells

from blurbflow.results.aggregate import best_grid_points, write_cells
from blurbflow.results.formats import format_table, to_latex, to_markdown, write_table
from blurbflow.results.stats import baseline_tests
from blurbflow.results.tables import column_labels, study_table


def cell_path(root, model, task, recipe, hparams, seed):
    cell = root / "results" / "cells" / model / task / recipe / hparams
    return cell / f"seed{seed}" / "result.json"


def write_result(root, model, task, recipe, hparams, seed, dev, test, status="ok", **extra):
    path = cell_path(root, model, task, recipe, hparams, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "cell": {"model": model, "task": task, "recipe": recipe, "hparams": hparams, "seed": seed},
        "task_type": "ner",
        "metric": "entity_f1",
        "options": {"lr": 3e-5, "epochs": 3},
        "status": status,
        "error": None if status == "ok" else "loss became nan",
        "epochs": [{"epoch": 1, "train_loss": 0.5, "dev": dev, "test": test, "seconds": 1.0}],
        "selected_epoch": 1,
        "dev": dev,
        "test": test,
        "chance_dev": 0.0,
        "chance_test": 0.0,
        "wall_seconds": 60.0,
        "gpu_hours": 0.5,
        "peak_memory_mb": 1000.0,
        "device": "cpu",
        "versions": {"python": "3.11", "torch": "2.13.0"},
        "git_commit": "abc123",
        "started": "2025-01-01T00:00:00",
        "finished": "2025-01-01T00:01:00",
        **extra,
    }
    path.write_text(json.dumps(result))
    return path


def test_load_cells_ok_missing_and_malformed(tmp_path):
    ok = write_result(tmp_path, "pubmedbert", "bc5chem", "standard", "lr3e-5", 1, 90.0, 89.0)
    missing = cell_path(tmp_path, "pubmedbert", "bc5chem", "standard", "lr3e-5", 2)
    malformed = cell_path(tmp_path, "pubmedbert", "bc5chem", "standard", "lr3e-5", 3)
    malformed.parent.mkdir(parents=True)
    malformed.write_text('{"cell": ')
    diverged = write_result(
        tmp_path, "pubmedbert", "bc5chem", "standard", "lr3e-5", 4, None, None, status="diverged"
    )

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


def test_cells_carry_head_pooling_and_attention(tmp_path):
    """`pooling` and `attn_implementation` from result.json, `head` from its options (null in a
    result written before they were recorded); a cell without a result takes the config's head."""
    from blurbflow.options import CellOptions, InputOptions
    from blurbflow.results.aggregate import load_cell

    new = write_result(
        tmp_path, "m", "gad", "r", "h", 1, 1.0, 1.0, pooling="pooler", attn_implementation="sdpa"
    )
    options = json.loads(new.read_text())
    new.write_text(json.dumps({**options, "options": {"head": "cls_linear"}}))
    old = write_result(tmp_path, "m", "gad", "r", "h", 2, 1.0, 1.0)
    frame = load_cells([new, old])
    assert frame.loc[0, ["head", "pooling", "attn_implementation"]].tolist() == [
        "cls_linear",
        "pooler",
        "sdpa",
    ]
    assert frame.loc[1, ["head", "pooling", "attn_implementation"]].isna().all()
    place = {"model": "m", "model_source": "org/m", "task": "gad", "recipe": "r", "hparams": "h"}
    given = CellOptions(**place, seed=3, head="bilstm", inputs=InputOptions(max_length=128))
    row = load_cell(cell_path(tmp_path, "m", "gad", "r", "h", 3), given)
    assert row["status"] == "missing" and row["head"] == "bilstm" and row.get("pooling") is None
    write_cells(frame, tmp_path / "cells.parquet")  # the columns survive parquet
    assert pd.read_parquet(tmp_path / "cells.parquet").loc[0, "head"] == "cls_linear"


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


def test_the_frame_columns_and_types_come_from_the_result_schema(tmp_path):
    from blurbflow.record import schema

    paths = [write_result(tmp_path, "m", "bc5chem", "r", "h", 1, 90.0, 89.0, selected_epoch=2)]
    frame = load_cells([*paths, cell_path(tmp_path, "m", "bc5chem", "r", "h", 2)])
    assert list(frame.columns) == schema.COLUMNS
    assert schema.COLUMNS[:5] == list(schema.CELL_KEYS) and schema.COLUMNS[-1] == "path"
    assert {str(frame[c].dtype) for c in schema.NUMERIC} == {"float64"}
    assert str(frame["selected_epoch"].dtype) == "Int64" and frame.loc[0, "selected_epoch"] == 2
    assert pd.isna(frame.loc[1, "selected_epoch"]) and pd.isna(frame.loc[1, "dev"])
    # every column is a declared field of result.json or a recipe option read off its
    # `options`; the rest stay in the file only
    fields = set(schema.Result.__annotations__)
    assert set(schema.COLUMNS) - {*schema.CELL_KEYS, *schema.OPTION_COLUMNS, "path"} < fields
    assert set(schema.OPTION_COLUMNS) == {"head"} and not set(schema.OPTION_COLUMNS) & fields
    assert {"identity", "predictions_sha256", "train_ids_sha"} <= fields - set(schema.COLUMNS)


def test_provenance_of_the_report_spans_the_cells_and_names_the_packages():
    from blurbflow.util.provenance import REPORT_PACKAGES, collect_provenance, package_version

    cells = pd.DataFrame(
        {
            "started": ["2025-01-02T00:00:00", None, "2025-01-01T00:00:00"],
            "finished": ["2025-01-02T01:00:00", None, "2025-01-03T00:00:00"],
            "device": ["cpu", None, "NVIDIA H100"],
        }
    )
    provenance = collect_provenance({"code_version": "7"}, "abc", cells)
    assert provenance["config hash"] == "abc" and provenance["code version (config)"] == "7"
    assert provenance["first cell started"] == "2025-01-01T00:00:00"
    assert provenance["last cell finished"] == "2025-01-03T00:00:00"
    assert provenance["cell devices"] == "NVIDIA H100, cpu"
    assert provenance["package pandas"] == pd.__version__
    assert {f"package {p}" for p in REPORT_PACKAGES} <= set(provenance)
    assert package_version("no-such-package-x") == "not installed"


def frame_of(rows, chance_dev=0.0):
    """A cells frame from (model, task, recipe, hparams, seed, dev, test, status) tuples."""
    columns = ["model", "task", "recipe", "hparams", "seed", "dev", "test", "status"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["gpu_hours"] = 0.1
    frame["wall_seconds"] = 360.0
    frame["chance_dev"] = chance_dev
    return frame


def test_best_grid_points_best_mean_dev_over_ok_seeds():
    frame = frame_of(
        [
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
        ]
    )
    selected = best_grid_points(frame)
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
        ("bc5chem", "base"): [90.0, 92.0, 97.0],
        ("bc5chem", "llrd"): [91.0, 91.0, 91.0],
        ("ncbidisease", "base"): [80.0, 82.0, 84.0],
        ("ncbidisease", "llrd"): [86.0],
        ("chemprot", "base"): [70.0, 74.0, 75.0],
        ("chemprot", "llrd"): [77.0, 78.0, 79.0],
        ("biosses", "base"): [60.0, 70.0, 80.0],
        ("biosses", "llrd"): [85.0, 88.0, 91.0],
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
        "bc5chem",
        "ncbidisease",
        "chemprot",
        "biosses",
        "BLURB-style average (ner, re, sts)",
    ]
    base = table.loc["bc5chem", "base"]
    assert base["mean"] == pytest.approx(93.0)
    assert base["std"] == pytest.approx(statistics.stdev([90.0, 92.0, 97.0]))
    assert base["median"] == pytest.approx(92.0)
    assert base["n"] == 3
    one_seed = table.loc["ncbidisease", "llrd"]
    assert one_seed["n"] == 1 and one_seed["mean"] == 86.0 and math.isnan(one_seed["std"])
    assert one_seed["diverged"] == 1 and base["diverged"] == 0  # counted, not averaged in

    # base: ner (93 + 82)/2 = 87.5, re 73, sts 70 -> 76.833...
    # llrd: ner (91 + 86)/2 = 88.5, re 78, sts 88 -> 84.833...
    blurb = "BLURB-style average (ner, re, sts)"
    assert table.loc[blurb, ("base", "mean")] == pytest.approx((87.5 + 73 + 70) / 3)
    assert table.loc[blurb, ("llrd", "mean")] == pytest.approx((88.5 + 78 + 88) / 3)
    assert table.loc[blurb, ("llrd", "n")] == 1  # the weakest support among its tasks

    best = table.xs("best", axis=1, level="stat")
    assert best.loc["bc5chem"].to_dict() == {"base": True, "llrd": False}
    assert best.loc[blurb].to_dict() == {"base": False, "llrd": True}

    formatted = format_table(table)
    assert formatted.loc["bc5chem", "base"] == f"**93.0 ({statistics.stdev([90, 92, 97]):.1f})**"
    assert formatted.loc["ncbidisease", "llrd"] == "**86.0 [1 diverged]**"
    assert formatted.loc[blurb, "base"] == "76.8"


def test_study_table_counts_missing_entries_as_zero_seeds():
    study = {**STUDY, "recipes": ["base", "never-run"]}
    table = study_table(study_frame(), "s", study)
    assert (table.xs("n", axis=1, level="stat")["never-run"] == 0).all()
    assert math.isnan(table.loc["BLURB-style average (ner, re, sts)", ("never-run", "mean")])
    assert format_table(table).loc["bc5chem", "never-run"] == "–"


def test_study_table_tasks_as_columns_gets_blurb_column():
    study = {**STUDY, "table": {"rows": "recipe", "columns": ["task"]}}
    table = study_table(study_frame(), "s", study)
    assert list(table.index) == ["base", "llrd"]
    assert table.loc["base", ("BLURB-style average (ner, re, sts)", "mean")] == pytest.approx(
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
    medians = markdown.split("Median over seeds")[1]
    assert "| bc5chem | 92.0 (n=3) | 91.0 (n=3) |" in medians
    assert (
        "| BLURB-style average (ner, re, sts) | 77.0 | 84.8 |" in medians
    )  # base: (87 + 74 + 70) / 3
    tex = (tmp_path / "tables" / "recipes.tex").read_text()
    assert tex.count(r"\begin{tabular}") == 2 and "92.0 (n=3)" in tex
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
    assert len(best_grid_points(frame)) == 1


# --- seeds per task -------------------------------------------------------------------------

GU_SEEDS = {"default": 5, "biosses": 10}


def test_study_seeds_mapping_filters_each_task_to_its_own_seeds():
    from blurbflow.results.study_cells import in_study, seeds_of

    study = {
        **STUDY,
        "tasks": ["bc5chem", "biosses"],
        "recipes": ["base"],
        "seeds": GU_SEEDS,
        "table": {"rows": "task", "columns": ["recipe"]},
    }
    assert seeds_of(study, "bc5chem") == [1, 2, 3, 4, 5]
    assert seeds_of(study, "biosses") == list(range(1, 11))
    assert seeds_of(study) == list(range(1, 11))  # the union
    assert seeds_of({**study, "seeds": None}, "bc5chem") is None  # no seeds: any seed counts
    rows = [
        ("m", task, "base", "h", seed, 50.0, float(seed), "ok")
        for task in ("bc5chem", "biosses")
        for seed in range(1, 11)
    ]
    frame = frame_of(rows)
    kept = frame[in_study(frame, study)]
    assert sorted(kept[kept["task"] == "bc5chem"]["seed"]) == [1, 2, 3, 4, 5]
    assert sorted(kept[kept["task"] == "biosses"]["seed"]) == list(range(1, 11))
    table = study_table(frame, "s", study)
    assert table.loc["bc5chem", ("base", "n")] == 5 and table.loc["bc5chem", ("base", "mean")] == 3
    assert table.loc["biosses", ("base", "n")] == 10
    assert table.loc["biosses", ("base", "mean")] == pytest.approx(5.5)


# --- table layouts whose rows are recipes or models ------------------------------------------


def layout_frame():
    """Two models x two recipes on biosses and gad, three seeds each, known test scores."""
    base = {
        ("m1", "biosses", "std"): 80.0,
        ("m1", "biosses", "llrd"): 84.0,
        ("m2", "biosses", "std"): 86.0,
        ("m2", "biosses", "llrd"): 85.0,
        ("m1", "gad", "std"): 70.0,
        ("m1", "gad", "llrd"): 69.0,
        ("m2", "gad", "std"): 72.0,
        ("m2", "gad", "llrd"): 75.0,
    }
    rows = [
        (m, t, r, "h", seed, 50.0, value + seed - 2, "ok")
        for (m, t, r), value in base.items()
        for seed in (1, 2, 3)
    ]
    return frame_of(rows)


def test_recipes_as_rows_mark_the_best_recipe_per_model_and_task():
    # Tinn Table 3/8: rows = recipes, columns = models (one task)
    study = {
        "models": ["m1", "m2"],
        "tasks": ["biosses"],
        "recipes": ["std", "llrd"],
        "seeds": 3,
        "baseline": "std",
        "table": {"rows": "recipe", "columns": ["model"]},
    }
    table = study_table(layout_frame(), "t3", study)
    assert list(table.index) == ["std", "llrd"]
    assert column_labels(table) == ["m1", "m2"]  # no BLURB with a single task
    assert table.loc["llrd", ("m1", "mean")] == 84.0 and table.loc["std", ("m2", "mean")] == 86.0
    best = table.xs("best", axis=1, level="stat")
    # the best recipe in each column (per model), not one best in the whole table
    assert best.to_dict() == {
        "m1": {"std": False, "llrd": True},
        "m2": {"std": True, "llrd": False},
    }
    assert "recipes, for the same model" in table.attrs["best_rule"]
    markdown = to_markdown(table)
    assert "| recipe | m1 | m2 |" in markdown
    assert "| llrd | **84.0 (1.0)** | 85.0 (1.0) |" in markdown


def test_recipes_as_rows_with_model_and_task_columns_get_blurb_columns_per_model():
    # Tinn Table 4/8 layout: rows = recipes, columns = (model, task)
    study = {
        "models": ["m1", "m2"],
        "tasks": ["biosses", "gad"],
        "recipes": ["std", "llrd"],
        "seeds": 3,
        "baseline": "std",
        "table": {"rows": "recipe", "columns": ["model", "task"]},
    }
    table = study_table(layout_frame(), "t8", study)
    labels = column_labels(table)
    assert labels[:4] == ["m1 / gad", "m1 / biosses", "m2 / gad", "m2 / biosses"]  # BLURB order
    assert labels[4:] == [
        "BLURB-style average (re, sts) / m1",
        "BLURB-style average (re, sts) / m2",
    ]
    assert table.loc["std", ("BLURB-style average (re, sts) / m1", "mean")] == pytest.approx(
        (80 + 70) / 2
    )
    assert table.loc["llrd", ("BLURB-style average (re, sts) / m2", "mean")] == pytest.approx(
        (85 + 75) / 2
    )
    best = table.xs("best", axis=1, level="stat")
    assert best.loc["llrd", "BLURB-style average (re, sts) / m1"]  # 76.5 vs 75.0
    assert best.loc["llrd", "BLURB-style average (re, sts) / m2"]  # 80.0 vs 79.0
    assert best.loc["std", "m1 / gad"] and not best.loc["llrd", "m1 / gad"]
    tex = to_latex(table)
    assert r"\begin{tabular}{lrrrrrr}" in tex and r"BLURB-style average (re, sts) / m1" in tex


def test_models_as_rows_mark_the_best_model_per_task():
    study = {
        "models": ["m1", "m2"],
        "tasks": ["biosses", "gad"],
        "recipes": ["std"],
        "seeds": 3,
        "table": {"rows": "model", "columns": ["task"]},
    }
    table = study_table(layout_frame(), "models", study)
    assert list(table.index) == ["m1", "m2"]
    best = table.xs("best", axis=1, level="stat")
    assert best.loc["m2"].all() and not best.loc["m1"].any()  # m2 better on both and on BLURB
    assert "models, for the same task" in table.attrs["best_rule"]


def test_blurb_overview_per_type_means():
    from blurbflow.report.overview import blurb_overview

    study = {**STUDY, "seeds": [1, 2, 3]}
    overview = blurb_overview(study_frame(), study)
    assert list(overview.index) == ["base", "llrd"]
    assert list(overview.columns) == ["ner", "re", "sts", "BLURB-style average (ner, re, sts)", "n"]
    assert overview.loc["base", "ner"] == pytest.approx(87.5)
    assert overview.loc["llrd", "BLURB-style average (ner, re, sts)"] == pytest.approx(
        (88.5 + 78 + 88) / 3
    )
    assert overview.loc["llrd", "n"] == 1
    assert blurb_overview(study_frame(), {**study, "tasks": ["bc5chem"]}).empty


# --- statistics with known values ----------------------------------------------------------


def test_welch_p_matches_the_textbook_formula():
    from scipy.stats import t as student_t

    from blurbflow.results.stats import welch_p

    a, b = [85.0, 88.0, 91.0], [60.0, 70.0, 80.0]
    va, vb = statistics.variance(a) / 3, statistics.variance(b) / 3  # 3.0 and 33.33
    t_value = (statistics.mean(a) - statistics.mean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 2)  # Welch–Satterthwaite
    assert t_value == pytest.approx(2.98621, abs=1e-5) and df == pytest.approx(2.35711, abs=1e-5)
    assert welch_p(a, b) == pytest.approx(2 * student_t.sf(t_value, df))
    assert welch_p(a, b) == pytest.approx(0.0788, abs=1e-4)
    assert math.isnan(welch_p([1.0], b)) and math.isnan(welch_p([1.0, 1.0], [1.0, 1.0]))


def test_mannwhitney_exact_p_values():
    from blurbflow.results.stats import mannwhitney_p

    # completely separated samples of 3 and 3: 2 of the C(6,3) = 20 orderings are as extreme
    assert mannwhitney_p([85.0, 88.0, 91.0], [60.0, 70.0, 80.0]) == pytest.approx(0.1)
    # 5 vs 5 separated: 2 / C(10,5) = 2/252
    assert mannwhitney_p([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]) == pytest.approx(2 / 252)
    assert math.isnan(mannwhitney_p([1.0], [2.0, 3.0]))


def test_holm_adjustment():
    from blurbflow.results.stats import holm

    adjusted = holm([0.01, 0.04, 0.03, math.nan])
    assert adjusted[:3] == pytest.approx([0.03, 0.06, 0.06]) and math.isnan(adjusted[3])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([]) == []


def test_baseline_tests_columns_and_known_values():
    tests = baseline_tests(study_frame(), STUDY).set_index("task")
    biosses = tests.loc["biosses"]
    assert biosses["mean"] == 88.0 and biosses["mean_baseline"] == 70.0
    assert biosses["std"] == pytest.approx(3.0) and biosses["std_baseline"] == pytest.approx(10.0)
    assert biosses["p_mannwhitney"] == pytest.approx(0.1)
    # Holm over the three comparisons that have a p-value (ncbidisease has one llrd seed)
    p = tests["p_value"].dropna().sort_values()
    assert tests.loc[p.index[0], "p_holm"] == pytest.approx(min(1, 3 * p.iloc[0]))
    assert math.isnan(tests.loc["ncbidisease", "p_holm"])
    single = {**STUDY, "recipes": ["base"]}
    assert baseline_tests(study_frame(), single).empty


def test_failure_rates_count_diverged_and_collapsed_runs():
    from blurbflow.results.stats import failure_rates

    rows = [
        # recipe a, hparams h1 (selected: mean dev 60 on its ok seeds)
        ("m", "gad", "a", "h1", 1, 70.0, 70.0, "ok"),
        ("m", "gad", "a", "h1", 2, 50.0, 50.0, "ok"),  # dev = chance: collapsed
        ("m", "gad", "a", "h1", 3, math.nan, math.nan, "diverged"),
        ("m", "gad", "a", "h1", 4, math.nan, math.nan, "failed"),  # crashed: not counted
        ("m", "gad", "a", "h1", 5, math.nan, math.nan, "missing"),  # not run: not counted
        # recipe a, hparams h2 (mean dev 45: not selected), one run below chance
        ("m", "gad", "a", "h2", 1, 40.0, 40.0, "ok"),
        ("m", "gad", "a", "h2", 2, 50.5, 50.0, "ok"),
        # recipe b: all fine, plus an ok run without a dev score (counts as collapsed)
        ("m", "gad", "b", "h1", 1, 80.0, 80.0, "ok"),
        ("m", "gad", "b", "h1", 2, 81.0, 80.0, "ok"),
        ("m", "gad", "b", "h1", 3, math.nan, 80.0, "ok"),
    ]
    study = {"models": ["m"], "tasks": ["gad"], "recipes": ["a", "b"], "seeds": 5, "baseline": "a"}
    rates = failure_rates(frame_of(rows, chance_dev=50.0), study).set_index("recipe")
    a = rates.loc["a"]
    assert (a["runs"], a["diverged"], a["collapsed"]) == (3, 1, 1)
    assert a["failure_rate"] == pytest.approx(200 / 3)
    assert (a["runs_all"], a["collapsed_all"]) == (5, 2)
    assert a["failure_rate_all"] == pytest.approx(60.0)
    assert (a["crashed"], a["missing"]) == (1, 1)
    b = rates.loc["b"]
    assert (b["runs"], b["collapsed"], b["failure_rate"]) == (3, 1, pytest.approx(100 / 3))


def test_compute_spent_sums_every_cell_of_the_study():
    from blurbflow.results.stats import compute_spent

    frame = study_frame()
    spent = compute_spent(frame, STUDY)
    n = 3 * 7 + 1 + 1  # 22 ok seeds of the study, the diverged one; not seed 4 nor "other"
    assert spent["cells"] == n
    assert spent["gpu_hours"] == pytest.approx(0.1 * n)
    assert spent["wall_hours"] == pytest.approx(0.1 * n)


def test_blurb_13_and_more_show_the_blurb_score_and_the_wider_average():
    from blurbflow.metrics.blurb import BLURB_TASKS, blurb_score

    tasks = [*BLURB_TASKS, "linnaeus"]
    scores = {task: 60.0 + i for i, task in enumerate(tasks)}
    rows = [("m", t, "std", "h", seed, 50.0, scores[t], "ok") for t in tasks for seed in (1, 2)]
    study = {"models": ["m"], "tasks": tasks, "recipes": ["std"], "seeds": 2}
    table = study_table(
        frame_of(rows), "wide", {**study, "table": {"rows": "task", "columns": ["model"]}}
    )
    blurb = table.loc["BLURB", ("m", "mean")]
    wider = [r for r in table.index if r.startswith("BLURB-style average (ner, pico")]
    assert blurb == pytest.approx(blurb_score({t: scores[t] for t in BLURB_TASKS}))
    assert len(wider) == 1
    assert table.loc[wider[0], ("m", "mean")] == pytest.approx(blurb_score(scores))
    assert table.loc[wider[0], ("m", "mean")] != pytest.approx(blurb)  # linnaeus moves the NER mean
    assert set(table.attrs["blurb_rows"]) == {"BLURB", wider[0]}
