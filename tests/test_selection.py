"""Selection as the papers do it: technique hyperparameters as grid axes chosen on dev, one
setting per dataset chosen on reference models (Gu et al.), the recipe of a group chosen per
task on dev (Tinn et al. Table 9), recipes scoped to some tasks or models."""

from __future__ import annotations

import pandas as pd
import pytest

from blurbflow.config import expand_cells
from blurbflow.config.grid import hparams_name
from blurbflow.results.aggregate import COLUMNS, normalise_types
from blurbflow.results.formats import format_table, to_markdown
from blurbflow.results.stats import baseline_tests, failure_rates
from blurbflow.results.study_cells import study_cells
from blurbflow.results.tables import study_table
from blurbflow.util.errors import ConfigError


def frame(rows: list[tuple]) -> pd.DataFrame:
    """Cells from (model, task, recipe, hparams, seed, dev, test) tuples, all status ok."""
    records = [
        {
            "model": m,
            "task": t,
            "recipe": r,
            "hparams": h,
            "seed": s,
            "dev": d,
            "test": x,
            "status": "ok",
            "chance_dev": 0.0,
            "chance_test": 0.0,
            "gpu_hours": 0.1,
            "wall_seconds": 10.0,
        }
        for m, t, r, h, s, d, x in rows
    ]
    return normalise_types(pd.DataFrame(records, columns=COLUMNS))


def config(recipes: dict, **study) -> dict:
    base = {"models": ["m"], "tasks": ["biosses"], "recipes": list(recipes), "seeds": 2}
    return {
        "models": {m: {"hub_id": f"org/{m}"} for m in ("m", "bert", "biobert", "pubmedbert")},
        "recipes": recipes,
        "studies": {"s": {**base, **study}},
    }


# --- technique hyperparameters as grid axes -------------------------------------------------


def test_technique_lists_are_grid_axes_with_their_own_folders():
    cfg = config(
        {
            "plain": {"lr": [1e-5, 3e-5], "batch_size": 16, "reinit_top": 1},
            "search": {
                "lr": 1e-5,
                "batch_size": 16,
                "reinit_top": [1, 2, 3],
                "layerwise_lr_decay": [0.8, 0.9],
            },
        }
    )
    cells = expand_cells(cfg)
    plain = {c.hparams for c in cells.values() if c.recipe == "plain"}
    assert plain == {"lr1e-05-bs16", "lr3e-05-bs16"}  # no list: the folder names as before
    search = {c.hparams: c.options for c in cells.values() if c.recipe == "search"}
    assert len(search) == 6 and len(cells) == 2 * (2 + 6)
    options = search["lr1e-05-bs16-reinit2-llrd0.8"]
    assert options.reinit_top == 2 and options.layerwise_lr_decay == 0.8
    assert options.hparams == "lr1e-05-bs16-reinit2-llrd0.8"
    assert hparams_name(1e-5, 16, {"freeze_lower": "half", "layerwise_lr_decay": None}) == (
        "lr1e-05-bs16-freezehalf-llrdoff"
    )


def test_selection_chooses_the_technique_setting_on_dev():
    # the reinit depth with the best mean dev wins, whatever test says
    cells = frame(
        [
            ("m", "biosses", "r", "lr1e-05-bs16-reinit1", 1, 80.0, 95.0),
            ("m", "biosses", "r", "lr1e-05-bs16-reinit1", 2, 82.0, 95.0),
            ("m", "biosses", "r", "lr1e-05-bs16-reinit3", 1, 90.0, 70.0),
            ("m", "biosses", "r", "lr1e-05-bs16-reinit3", 2, 88.0, 72.0),
        ]
    )
    study = {"models": ["m"], "tasks": ["biosses"], "recipes": ["r"], "seeds": 2}
    chosen = study_cells(cells, study)
    assert set(chosen["hparams"]) == {"lr1e-05-bs16-reinit3"}
    table = study_table(cells, "s", study)
    assert table.xs("mean", axis=1, level="stat").iloc[0, 0] == pytest.approx(71.0)


# --- one setting per dataset from reference models (Gu et al.) ------------------------------

GU = {
    "models": ["bert", "biobert", "pubmedbert"],
    "tasks": ["biosses", "hoc"],
    "recipes": ["standard"],
    "seeds": 1,
    "table": {"rows": "task", "columns": ["model"]},
}


def gu_cells():
    rows = []
    # biosses: the references prefer A (mean 80 vs 75); pubmedbert alone would prefer B
    for model, a, b in (("bert", 78.0, 76.0), ("biobert", 82.0, 74.0), ("pubmedbert", 60.0, 95.0)):
        rows += [
            (model, "biosses", "standard", "A", 1, a, a),
            (model, "biosses", "standard", "B", 1, b, b),
        ]
    # hoc: the references prefer B
    for model, a, b in (("bert", 70.0, 71.0), ("biobert", 70.0, 72.0), ("pubmedbert", 90.0, 50.0)):
        rows += [(model, "hoc", "standard", "A", 1, a, a), (model, "hoc", "standard", "B", 1, b, b)]
    return frame(rows)


def test_reference_models_choose_one_setting_per_dataset_for_every_model():
    chosen = study_cells(gu_cells(), {**GU, "reference_models": ["bert", "biobert"]})
    points = {
        (m, t): h
        for m, t, h in zip(chosen["model"], chosen["task"], chosen["hparams"], strict=True)
    }
    assert points == {(m, "biosses"): "A" for m in GU["models"]} | {
        (m, "hoc"): "B" for m in GU["models"]
    }
    table = study_table(gu_cells(), "gu", {**GU, "reference_models": ["bert", "biobert"]})
    assert table.loc["biosses", ("pubmedbert", "mean")] == 60.0  # its own best (95) not taken
    # without reference models every model selects its own
    own = study_cells(gu_cells(), GU)
    assert set(own[own["model"] == "pubmedbert"]["hparams"]) == {"A", "B"}
    assert set(own[(own["model"] == "pubmedbert") & (own["task"] == "biosses")]["hparams"]) == {"B"}


# --- per task, the recipe of a group best on dev (Tinn et al. Table 9) ----------------------

T9 = {
    "models": ["m"],
    "tasks": ["biosses", "bioasq"],
    "recipes": ["standard", "freeze", "reinit"],
    "choose": {"optimal": ["freeze", "reinit"]},
    "seeds": 2,
    "baseline": "standard",
    "table": {"rows": "task", "columns": ["recipe"]},
}


def t9_cells():
    rows = []
    for seed in (1, 2):
        rows += [
            ("m", "biosses", "standard", "h", seed, 70.0, 70.0 + seed),
            ("m", "biosses", "freeze", "h", seed, 80.0, 99.0),  # best on test, not on dev
            ("m", "biosses", "reinit", "h", seed, 90.0, 85.0 + seed),
            ("m", "bioasq", "standard", "h", seed, 70.0, 60.0 + seed),
            ("m", "bioasq", "freeze", "h", seed, 88.0, 75.0 + seed),
            ("m", "bioasq", "reinit", "h", seed, 86.0, 99.0),
        ]
    return frame(rows)


def test_choose_picks_the_recipe_per_task_on_dev_and_marks_it():
    table = study_table(t9_cells(), "t9", T9)
    assert list(dict.fromkeys(table.columns.get_level_values("column"))) == ["standard", "optimal"]
    assert table.loc["biosses", ("optimal", "mean")] == pytest.approx(86.5)  # reinit
    assert table.loc["bioasq", ("optimal", "mean")] == pytest.approx(76.5)  # freeze
    text = format_table(table, bold=("", ""))
    assert text.loc["biosses", "optimal"].endswith("via reinit")
    assert text.loc["bioasq", "optimal"].endswith("via freeze")
    assert "via" not in text.loc["biosses", "standard"]
    assert "via reinit" in to_markdown(table)
    tests = baseline_tests(t9_cells(), T9)
    assert list(tests["recipe"]) == ["optimal", "optimal"]
    assert tests.set_index("task").loc["biosses", "mean"] == pytest.approx(86.5)
    failures = failure_rates(t9_cells(), T9).set_index("recipe")
    assert failures.loc["optimal", "runs"] == 4 and failures.loc["optimal", "runs_all"] == 8


def test_a_recipe_in_two_groups_shows_under_each_and_scope_picks_per_model():
    # Tinn et al. Table 9: "Standard" is `standard` for the BASE model and the improved
    # optimisation for the LARGE one; "Optimal" chooses among the Standard run and techniques
    study = {
        "models": ["base", "large"],
        "tasks": ["biosses"],
        "recipes": ["standard", "improved", "reinit"],
        "recipe_scope": {"standard": {"models": ["base"]}, "improved": {"models": ["large"]}},
        "choose": {
            "standard-ft": ["standard", "improved"],
            "optimal": ["standard", "improved", "reinit"],
        },
        "seeds": 2,
        "table": {"rows": "task", "columns": ["model", "recipe"]},
    }
    rows = []
    for seed in (1, 2):
        rows += [
            ("base", "biosses", "standard", "h", seed, 90.0, 80.0),  # best base on dev
            ("base", "biosses", "improved", "h", seed, 99.0, 99.0),  # another study's run
            ("base", "biosses", "reinit", "h", seed, 85.0, 70.0),
            ("large", "biosses", "improved", "h", seed, 70.0, 60.0),
            ("large", "biosses", "reinit", "h", seed, 88.0, 90.0),  # best large on dev
        ]
    table = study_table(frame(rows), "t9", study)
    assert list(dict.fromkeys(table.columns.get_level_values("column"))) == [
        "base / standard-ft",
        "base / optimal",
        "large / standard-ft",
        "large / optimal",
    ]
    means = {c: table.loc["biosses", (c, "mean")] for c in ("base / standard-ft", "base / optimal")}
    assert means == {"base / standard-ft": 80.0, "base / optimal": 80.0}  # standard, twice
    assert table.loc["biosses", ("large / standard-ft", "mean")] == 60.0  # improved
    assert table.loc["biosses", ("large / optimal", "mean")] == 90.0  # reinit
    failures = failure_rates(frame(rows), study).set_index("recipe")
    assert failures.loc["optimal", "runs"] == 4 and failures.loc["standard-ft", "runs"] == 4
    same = {"a": ["standard", "improved"], "b": ["improved", "standard"]}
    cfg = config({"standard": {}, "improved": {}, "reinit": {}}, choose=same)
    with pytest.raises(ConfigError, match=r"studies\.s\.choose\.b: the same recipes as `a`"):
        expand_cells(cfg)


def test_recipe_scope_limits_what_runs_and_what_the_table_reads():
    recipes = {
        "base": {"lr": 1e-5, "batch_size": 16},
        "deep": {"lr": 1e-5, "batch_size": 16, "reinit_top": [4, 5]},
    }
    cfg = config(
        recipes,
        models=["m", "bert"],
        tasks=["biosses", "hoc"],
        recipe_scope={"deep": {"tasks": ["biosses"], "models": ["m"]}},
    )
    cells = expand_cells(cfg).values()
    assert {(c.model, c.task) for c in cells if c.recipe == "deep"} == {("m", "biosses")}
    assert len(cells) == 2 * 2 * 2 + 2 * 2  # base everywhere, deep on one model and task
    study = cfg["studies"]["s"]
    other = frame(
        [("bert", "hoc", "deep", "x", 1, 1.0, 1.0), ("m", "hoc", "base", "y", 1, 1.0, 1.0)]
    )
    assert list(study_cells(other, study)["recipe"]) == ["base"]  # another study's run


@pytest.mark.parametrize(
    ("study", "message"),
    [
        ({"choose": {"best": ["a"]}}, "studies.s.choose.best: list at least two recipes"),
        ({"choose": {"best": ["a", "zz"]}}, "'zz' is not one of the study's recipes"),
        ({"choose": {"a": ["a", "b"]}}, "studies.s.choose.a: the label names a recipe"),
        ({"choose": {"x": ["a", "b"]}, "baseline": "a"}, "studies.s.baseline: 'a' is chosen"),
        ({"reference_models": ["bert"]}, "studies.s.reference_models: 'bert' is not one"),
        ({"recipe_scope": {"a": {"tasks": ["hoc"]}}}, "recipe_scope.a.tasks: 'hoc' is not one"),
    ],
)
def test_bad_selection_keys_are_named(study, message):
    cfg = config({"a": {}, "b": {"reinit_top": 1}}, **study)
    with pytest.raises(ConfigError) as error:
        expand_cells(cfg)
    assert message in str(error.value)


def test_the_report_shows_the_chosen_recipe():
    from blurbflow.report.render import _study_view

    view = _study_view(t9_cells(), "t9", T9)
    assert view["table"]["columns"] == ["standard", "optimal"]
    texts = {row["label"]: [c["text"] for c in row["cells"]] for row in view["table"]["rows"]}
    assert texts["biosses"][1].endswith("via reinit") and texts["bioasq"][1].endswith("via freeze")
    labels = {e["label"] for section in view["seed_sections"] for e in section["entries"]}
    assert labels == {"standard", "optimal"}
