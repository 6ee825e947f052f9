"""A study's `statistic`: mean (Gu, Tinn) or median (Bio-LM) drives the table entry, the bold
marks and the BLURB score, with the spread shown either way (std, or the IQR)."""

from __future__ import annotations

import pytest
from test_results import frame_of

from blurbflow.report.overview import blurb_overview
from blurbflow.results.formats import to_latex, to_markdown
from blurbflow.results.tables import study_table

# recipe a has the better mean on both tasks (one very good seed), recipe b the better median
SCORES = {
    ("gad", "a"): [60.0, 61.0, 95.0],
    ("gad", "b"): [64.0, 65.0, 66.0],
    ("biosses", "a"): [70.0, 71.0, 99.0],
    ("biosses", "b"): [75.0, 76.0, 77.0],
}


def frame():
    rows = [
        ("m", task, recipe, "h", seed, 50.0, value, "ok")
        for (task, recipe), values in SCORES.items()
        for seed, value in enumerate(values, start=1)
    ]
    return frame_of(rows)


def study(statistic=None):
    entry = {
        "models": ["m"],
        "tasks": ["gad", "biosses"],
        "recipes": ["a", "b"],
        "seeds": 3,
        "table": {"rows": "task", "columns": ["recipe"]},
    }
    return entry if statistic is None else {**entry, "statistic": statistic}


def test_mean_and_median_disagree_on_the_hand_made_frame():
    table = study_table(frame(), "s", study())
    assert table.loc["gad", ("a", "mean")] == pytest.approx(72.0)
    assert table.loc["gad", ("b", "mean")] == pytest.approx(65.0)
    assert table.loc["gad", ("a", "median")] == 61.0 < table.loc["gad", ("b", "median")] == 65.0


def test_the_default_marks_bold_by_means():
    table = study_table(frame(), "s", study())
    best = table.xs("best", axis=1, level="stat")
    assert best["a"].all() and not best["b"].any()  # both tasks and BLURB
    assert table.attrs["statistic"] == "mean" and "best mean" in table.attrs["best_rule"]
    markdown = to_markdown(table)
    assert "| gad | **72.0 (19.9)** | 65.0 (1.0) |" in markdown
    assert markdown.startswith("| task |")  # mean tables keep their former layout


def test_a_median_study_marks_bold_by_medians_and_shows_the_iqr():
    table = study_table(frame(), "s", study("median"))
    best = table.xs("best", axis=1, level="stat")
    assert best["b"].all() and not best["a"].any()
    blurb = [r for r in table.index if r.startswith("BLURB")][0]
    # BLURB of medians: mean over the types (re: gad, sts: biosses) of the per-task medians
    assert table.loc[blurb, ("b", "median")] == pytest.approx((65.0 + 76.0) / 2)
    assert table.loc["gad", ("a", "iqr")] == pytest.approx(78.0 - 60.5)  # numpy's linear
    assert "best median" in table.attrs["best_rule"]
    markdown = to_markdown(table)
    assert markdown.startswith("Median (IQR")
    assert "| gad | 61.0 (17.5) | **65.0 (1.0)** |" in markdown
    assert "Mean over seeds" in markdown and "| gad | 72.0 (n=3) | 65.0 (n=3) |" in markdown
    assert r"\textbf{65.0 (1.0)}" in to_latex(table)


def test_the_overview_blurb_follows_the_statistic():
    label = "BLURB-style average (re, sts)"
    assert blurb_overview(frame(), study("median")).loc["b", label] == pytest.approx(70.5)
    assert blurb_overview(frame(), study()).loc["a", label] == pytest.approx((72.0 + 80.0) / 2)


def test_an_unknown_statistic_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="'mode' is not one of mean, median"):
        study_table(frame(), "s", study("mode"))


def test_the_report_of_a_median_study_shows_medians_with_the_iqr_and_the_mean_below(tmp_path):
    from test_report import STUDIES, make_cells

    from blurbflow.report import render_report

    studies = {"recipes": {**STUDIES["recipes"], "statistic": "median"}}
    out = tmp_path / "report.html"
    render_report(make_cells(tmp_path), studies, out, {"config_hash": "c", "versions": {}})
    html = out.read_text(encoding="utf-8")
    assert "median (IQR: 75th minus 25th percentile)" in html
    assert "Bold: best median among the recipes" in html
    # biosses/standard: seeds 71 and 81: median 76.0, IQR 78.5 − 73.5 = 5.0, mean shown below
    assert "76.0 (5.0)" in html and '<small class="median">mean 76.0' in html
