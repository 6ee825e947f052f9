"""A study's comparisons with their power (results/comparisons.py): which comparisons are made,
their numbers are results/power.py's on the table's seeds, each side's failures are counted as
the failure rate counts them, the study's `delta` is used and checked by the config schema, the
tables step writes `{study}.comparisons.csv`, and the report shows it."""

from __future__ import annotations

import copy
import json
import math

import pandas as pd
import pytest
import yaml
from results_helpers import load_cells
from test_report import write_result
from test_results import frame_of

from blurbflow import steps
from blurbflow.config.validate import check_config
from blurbflow.report import render_report
from blurbflow.results.comparisons import COLUMNS, study_comparisons
from blurbflow.results.power import compare
from blurbflow.util.errors import ConfigError

from workflow_helpers import REPO

SCORES = {  # (model, recipe) → gad test scores, seeds 1..
    ("m1", "a"): [80.0, 81.0, 82.0, 83.0],
    ("m1", "b"): [90.0, 91.0, 92.0, 93.0],  # clearly better than a
    ("m2", "a"): [80.1, 81.0, 82.0, 82.9],  # within ±1 of m1's a... with 4 seeds: undecided
    ("m2", "b"): [90.0, 91.0, 92.0, 1.0],  # seed 4 collapsed (dev at chance), still a score
}
STUDY = {
    "models": ["m1", "m2"],
    "tasks": ["gad"],
    "recipes": ["a", "b"],
    "seeds": 5,
    "baseline": "a",
    "table": {"rows": "task", "columns": ["model", "recipe"]},
}


def cells() -> pd.DataFrame:
    rows = [
        (model, "gad", recipe, "h", seed, 50.0, value, "ok")
        for (model, recipe), values in SCORES.items()
        for seed, value in enumerate(values, start=1)
    ]
    rows.append(("m1", "gad", "a", "h", 5, math.nan, math.nan, "diverged"))
    rows.append(("m1", "gad", "b", "h", 5, math.nan, math.nan, "failed"))  # a crash: not counted
    frame = frame_of(rows, chance_dev=10.0)
    collapsed = (frame["model"] == "m2") & (frame["recipe"] == "b") & (frame["seed"] == 4)
    frame.loc[collapsed, "dev"] = 10.0  # at chance
    return frame


def test_each_recipe_against_the_baseline_and_each_pair_of_models():
    frame = study_comparisons(cells(), STUDY)
    assert list(frame.columns) == COLUMNS
    sides = [
        (r.kind, r.model, r.recipe, r.reference_model, r.reference_recipe)
        for r in frame.itertuples()
    ]
    assert sides == [
        ("recipe", "m1", "b", "m1", "a"),
        ("recipe", "m2", "b", "m2", "a"),
        ("model", "m2", "a", "m1", "a"),
        ("model", "m2", "b", "m1", "b"),
    ]
    assert (frame["task"] == "gad").all() and (frame["delta"] == 1.0).all()


def test_numbers_are_the_power_module_s_on_the_table_s_seeds():
    frame = study_comparisons(cells(), STUDY).set_index(["kind", "model", "recipe"])
    for (kind, model, recipe), reference in (
        (("recipe", "m1", "b"), ("m1", "a")),
        (("model", "m2", "a"), ("m1", "a")),
        (("model", "m2", "b"), ("m1", "b")),
    ):
        row = frame.loc[(kind, model, recipe)]
        expected = compare(SCORES[(model, recipe)], SCORES[reference], 1.0)
        for key in ("difference", "low", "high", "p_welch", "p_tost", "mde"):
            assert row[key] == pytest.approx(expected[key]), key
        assert row["seeds_needed"] == expected["seeds_needed"]
        assert row["label"] == expected["label"]
    assert frame.loc[("recipe", "m1", "b"), "label"] == "different"
    assert frame.loc[("recipe", "m1", "b"), "difference"] == pytest.approx(10.0)
    assert frame.loc[("model", "m2", "a"), "label"] == "undecided"


def test_each_side_shows_its_failures():
    frame = study_comparisons(cells(), STUDY).set_index(["kind", "model", "recipe"])
    m1 = frame.loc[("recipe", "m1", "b")]
    # m1/a: 4 ok and 1 diverged (5 finished, 1 failed); m1/b's crash is not a finished run
    assert (m1["runs"], m1["failed"], m1["runs_reference"], m1["failed_reference"]) == (4, 0, 5, 1)
    m2 = frame.loc[("recipe", "m2", "b")]
    assert (m2["runs"], m2["failed"], m2["n"]) == (4, 1, 4)  # collapsed: failed, yet a score


def test_a_wider_delta_makes_close_models_equivalent():
    wide = study_comparisons(cells(), {**STUDY, "delta": 5.0}).set_index(["kind", "model"])
    row = wide.loc[("model", "m2")].iloc[0]  # m2 − m1 with recipe a: difference 0.0
    assert row["delta"] == 5.0 and row["label"] == "equivalent"
    # spreads of about 1.3 against a difference of 5: 3 seeds a side (2 give the t-test 2 df)
    assert row["seeds_needed"] == 3


def test_a_study_without_a_baseline_still_compares_its_models():
    frame = study_comparisons(cells(), {k: v for k, v in STUDY.items() if k != "baseline"})
    assert set(frame["kind"]) == {"model"} and len(frame) == 2


@pytest.mark.parametrize("value", [0, -1.0, "one"])
def test_the_schema_refuses_a_delta_that_is_not_above_0_naming_the_key(value):
    schema = yaml.safe_load(open(REPO / "workflow/schemas/config.schema.yaml"))
    config = yaml.safe_load(open(REPO / "config/demo.yaml"))
    config["studies"]["demo"]["delta"] = 2.5
    check_config(copy.deepcopy(config), schema)
    config["studies"]["demo"]["delta"] = value
    with pytest.raises(ConfigError) as error:
        check_config(config, schema)
    assert str(error.value).startswith("studies.demo.delta: ")
    assert "a number above 0" in str(error.value)


def test_the_tables_step_writes_the_comparisons_csv_beside_the_table(tmp_path):
    cells().to_parquet(tmp_path / "cells.parquet")
    steps.tables({"studies": {"s": STUDY}}, str(tmp_path / "cells.parquet"), str(tmp_path / "t"))
    written = pd.read_csv(tmp_path / "t" / "s.comparisons.csv")
    assert list(written.columns) == COLUMNS and len(written) == 4
    expected = study_comparisons(cells(), STUDY)
    assert written["label"].tolist() == expected["label"].tolist()
    assert written["low"].tolist() == pytest.approx(expected["low"].tolist())
    assert written["seeds_needed"].tolist() == expected["seeds_needed"].astype(float).tolist()


def render(tmp_path, frame: pd.DataFrame, study: dict) -> str:
    """The report of `frame`'s cells, written as result files (the report reads them all)."""
    paths = []
    for r in frame.itertuples():
        test = None if math.isnan(r.test) else r.test
        path = write_result(tmp_path, r.model, r.task, r.recipe, r.hparams, r.seed, test, r.status)
        result = json.loads(path.read_text())
        result.update(chance_dev=r.chance_dev, dev=None if math.isnan(r.dev) else r.dev)
        path.write_text(json.dumps(result))
        paths.append(path)
    out = tmp_path / "report.html"
    render_report(load_cells(paths), {"s": study}, out, {})
    return out.read_text()


def test_the_report_shows_interval_mde_label_and_failures_per_comparison(tmp_path):
    html = render(tmp_path, cells(), STUDY)
    view = html.split('class="power"')[1].split("</table>")[0]
    rows = view.split('<tr class="comparison"')[1:]
    assert len(rows) == 4
    first = rows[0]  # m1: b − a
    expected = compare(SCORES[("m1", "b")], SCORES[("m1", "a")], 1.0)
    assert 'data-label="different"' in first and ">different<" in first
    assert f'class="interval nowrap">[{expected["low"]:.2f}, {expected["high"]:.2f}]<' in first
    assert f'class="mde">{expected["mde"]:.2f}<' in first
    assert "<td>0/4</td><td>1/5</td>" in first  # failed of finished runs, each side
    assert "<td>1/4</td>" in rows[1]  # m2/b's collapsed seed
    assert "<b>1</b> different, <b>0</b> equivalent within ±1, <b>3</b> undecided" in html
    assert 'id="power-s"' in html and "seeds for ±1" in html


def test_seeds_that_all_scored_the_same_show_no_spread_rather_than_an_interval(tmp_path):
    same = frame_of([("m", "gad", r, "h", s, 50.0, 94.9, "ok") for r in "ab" for s in (1, 2)])
    study = {**STUDY, "models": ["m"]}
    row = study_comparisons(same, study).iloc[0]
    assert row["difference"] == 0.0 and math.isnan(row["low"]) and row["label"] == "undecided"
    html = render(tmp_path, same, study)
    assert 'class="interval nowrap">no spread<' in html and 'class="mde">–<' in html
