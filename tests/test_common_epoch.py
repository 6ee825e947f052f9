"""A study's `select: common_epoch` (Gu et al. 2021 §6.2: the epoch number tuned on dev and
shared by the seeds): one evaluation point per grid point, chosen by the mean dev over seeds,
where every seed reports its test score; on the reference models with `reference_models`."""

from __future__ import annotations

import copy
import json
import random

import numpy as np
import pandas as pd
import pytest

from blurbflow.config import expand_cells
from blurbflow.config.grid import reference_selects
from blurbflow.report.seeds import seed_sections
from blurbflow.results.aggregate import COLUMNS, normalise_types
from blurbflow.results.common_epoch import at_common_points
from blurbflow.results.formats import to_csv, to_markdown
from blurbflow.results.handover import choose_on_reference
from blurbflow.results.study_cells import seed_scores, study_cells
from blurbflow.results.study_json import study_results
from blurbflow.results.tables import study_table
from blurbflow.util.errors import ConfigError

# (dev, test) per epoch of three seeds: each seed's own best dev is at epoch 2, 3 and 2; the
# mean dev is best at epoch 2 (77.7 against 67.0 and 75.0)
CURVES = {
    1: [(70, 60), (80, 65), (72, 70)],
    2: [(71, 61), (75, 66), (79, 68)],
    3: [(60, 55), (78, 64), (74, 69)],
}


def cell(model, hparams, seed, curve, status="ok", task="biosses", options=None, **extra):
    """A cells-frame row whose `epochs` records hold `curve`; dev and test as its own best dev
    evaluation selected them (per-seed selection)."""
    records = [{"epoch": e, "dev": d, "test": t} for e, (d, t) in enumerate(curve, start=1)]
    best = max(records, key=lambda r: r["dev"]) if records else {}
    return {
        "model": model,
        "task": task,
        "recipe": "standard",
        "hparams": hparams,
        "seed": seed,
        "status": status,
        "dev": best.get("dev"),
        "test": best.get("test"),
        "selected_epoch": best.get("epoch"),
        "epochs": json.dumps(records),
        "options": json.dumps(options or {"select": "best_dev"}),
        "chance_dev": 0.0,
        "chance_test": 0.0,
        "gpu_hours": 0.1,
        "wall_seconds": 10.0,
        **extra,
    }


def cells(rows: list[dict]) -> pd.DataFrame:
    return normalise_types(pd.DataFrame(rows, columns=COLUMNS))


def study(**keys) -> dict:
    base = {"models": ["m"], "tasks": ["biosses"], "recipes": ["standard"], "seeds": 3}
    return {**base, "select": "common_epoch", **keys}


def three_seeds(model="m", hparams="lr1", curves=CURVES) -> list[dict]:
    return [cell(model, hparams, seed, curve) for seed, curve in curves.items()]


def test_every_seed_reports_its_test_score_at_the_point_of_the_best_mean_dev():
    found = cells(three_seeds())
    per_seed = seed_scores(study_cells(found, study(select="per_seed")))
    assert per_seed[("m", "biosses", "standard")] == [65.0, 68.0, 64.0]  # each seed its best
    selected = study_cells(found, study())
    assert seed_scores(selected)[("m", "biosses", "standard")] == [65.0, 66.0, 64.0]
    assert list(selected["dev"]) == [80.0, 75.0, 78.0]  # the dev the grid point is chosen on
    assert set(selected["common_epoch"]) == {2} and selected["common_step"].isna().all()


def test_the_point_is_a_function_of_the_mean_dev_over_seeds():
    rng = random.Random(0)
    for _ in range(8):
        devs = np.array([[rng.uniform(40, 90) for _ in range(6)] for _ in range(5)])
        curves = {seed: [(d, d - 10) for d in row] for seed, row in enumerate(devs, start=1)}
        found = at_common_points(cells(three_seeds(curves=curves)))
        assert set(found["common_epoch"]) == {int(devs.mean(axis=0).argmax()) + 1}
        shuffled = dict(zip(curves, rng.sample(list(curves.values()), len(curves)), strict=True))
        again = at_common_points(cells(three_seeds(curves=shuffled)))
        assert set(again["common_epoch"]) == set(found["common_epoch"])  # seeds' order: none


def test_a_failed_diverged_or_missing_seed_neither_votes_nor_reports():
    rows = three_seeds()[:2]  # seeds 1 and 2 ok: mean dev 70.5, 77.5, 75.5 -> epoch 2
    rows.append(cell("m", "lr1", 3, [(99, 99), (10, 10), (10, 10)], status="diverged"))
    rows.append(cell("m", "lr1", 4, [], status="failed"))
    # seed 5 is missing: no row at all
    selected = study_cells(cells(rows), study(seeds=5))
    assert seed_scores(selected)[("m", "biosses", "standard")] == [65.0, 66.0]
    diverged = selected[selected["seed"] == 3].iloc[0]
    assert diverged["status"] == "diverged" and pd.isna(diverged["common_epoch"])
    # seed 3 finishes ok after all: it votes, and the point moves to epoch 3
    rows[2] = cell("m", "lr1", 3, [(60, 50), (60, 51), (99, 52)])
    selected = study_cells(cells(rows), study(seeds=5))
    assert seed_scores(selected)[("m", "biosses", "standard")] == [70.0, 68.0, 52.0]


def test_grid_point_and_epoch_are_chosen_together():
    # lr1: per-seed best devs 80, 79, 78 but mean dev at one epoch at most 77.7; lr2: flat 78.5
    flat = {seed: [(78.5, 90.0)] * 3 for seed in CURVES}
    found = cells(three_seeds() + three_seeds(hparams="lr2", curves=flat))
    assert set(study_cells(found, study(select="per_seed"))["hparams"]) == {"lr1"}
    common = study_cells(found, study())
    assert set(common["hparams"]) == {"lr2"} and set(common["common_epoch"]) == {1}


def test_seeds_that_stopped_early_report_at_the_best_point_they_all_reached():
    stopped = {**CURVES, 3: CURVES[3][:2]}  # `patience`: seed 3 never reached epoch 3
    stopped[1] = [(70, 60), (71, 65), (99, 70)]  # epoch 3 best for the two that reached it
    selected = study_cells(cells(three_seeds(curves=stopped)), study())
    assert set(selected["common_epoch"]) == {2}
    assert seed_scores(selected)[("m", "biosses", "standard")] == [65.0, 66.0, 64.0]


def test_cells_that_keep_their_last_evaluation_are_left_as_they_are():
    last = {"select": "last"}
    rows = [cell("m", "lr1", s, c, options=last) for s, c in CURVES.items()]
    rows.append(cell("m", "lr1", 4, CURVES[1], options={"train_on": "train+dev"}))
    found = cells(rows)
    selected = at_common_points(found)
    assert selected["common_epoch"].isna().all()
    assert list(selected["test"]) == list(found["test"])


def reference_cells() -> pd.DataFrame:
    """Reference models r1, r2 on two grid points: lr1 has the better per-seed best devs (79.0
    on average), lr2 the better mean dev at one epoch (78.6 at epoch 3, against lr1's 77.7).
    Model o trained at their choice (`on-r1+r2`), its own best dev at epoch 1."""
    steady = {seed: [(78.0, 1.0), (78.2, 2.0), (78.6, 3.0)] for seed in CURVES}
    rows = []
    for model in ("r1", "r2"):
        rows += three_seeds(model, "lr1") + three_seeds(model, "lr2", steady)
    rows += [cell("o", "on-r1+r2", seed, [(90, 10), (50, 20), (50, 30)]) for seed in (1, 2)]
    return cells(rows)


def test_reference_models_choose_one_point_that_every_model_reports_at():
    found = reference_cells()
    gu = study(models=["r1", "r2", "o"], reference_models=["r1", "r2"])
    selected = study_cells(found, gu)
    assert set(selected["common_epoch"]) == {3}
    assert set(zip(selected["model"], selected["hparams"], strict=True)) == {
        ("r1", "lr2"),
        ("r2", "lr2"),
        ("o", "on-r1+r2"),
    }
    assert seed_scores(selected)[("o", "biosses", "standard")] == [30.0, 30.0]  # not its own
    # the rule that tells the other models which point to train: the same choice
    refs = found[found["model"] != "o"].assign(options='{"lr": 3}')
    assert choose_on_reference(refs, ["r1", "r2"], "common_epoch")["from"]["hparams"] == "lr2"
    assert choose_on_reference(refs, ["r1", "r2"])["from"]["hparams"] == "lr1"


def test_tables_study_json_and_report_name_the_point():
    found = cells(three_seeds())
    s = study()
    table = study_table(found, "s", s)
    assert table[("m / standard", "epoch")].tolist() == [2]
    assert "m / standard:epoch" in to_csv(table)
    assert "`select: common_epoch`" in to_markdown(table)
    config = {"studies": {"s": s}, "models": {"m": {"hub_id": "org/m"}}, "recipes": {}}
    results = study_results(found, config, "s")
    assert results["select"] == "common_epoch"
    entry = results["columns"][0]["tasks"]["biosses"]
    assert entry["evaluation"] == {"epoch": 2, "step": None} and entry["n"] == 3
    sections = seed_sections(study_cells(found, s), s, {})
    assert sections[0]["entries"][0]["hparams"] == "lr1, epoch 2"


def demo_config() -> dict:
    with open("config/demo.yaml") as handle:
        import yaml

        return yaml.safe_load(handle)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c, s: s.update(export_models="best_seed"), "not with `export_models`"),
        (
            lambda c, s: s.update(
                seeds={"adaptive": {"start": 2, "step": 1, "max": 3, "delta": 1}}
            ),
            "adaptive",
        ),
    ],
)
def test_what_a_common_epoch_is_refused_with(edit, message):
    config = demo_config()
    config["studies"]["demo"]["select"] = "common_epoch"
    edit(config, config["studies"]["demo"])
    with pytest.raises(ConfigError, match=message):
        expand_cells(config)


def test_studies_sharing_a_reference_choice_choose_the_epoch_alike():
    config = demo_config()
    demo = config["studies"]["demo"]
    demo.update(reference_models=["tiny-biobert"], select="common_epoch")
    other = config["studies"]["other"] = copy.deepcopy(demo)
    selects = reference_selects(config["studies"])
    assert set(selects.values()) == {"common_epoch"} and len(selects) == 10
    assert "results/selection/reference/tiny-biobert/gad/standard.json" in selects
    other["select"] = "per_seed"
    with pytest.raises(ConfigError, match=r"studies\.other\.select: per_seed, but studies\.demo"):
        expand_cells(config)
