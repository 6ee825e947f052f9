"""The paper's number beside ours (results/reproduction.py, results/published_values.py): known
seeds give known intervals and verdicts against the margin (give or take half a printed digit;
tests/test_reproduction_verdict.py has the verdict's own cases), `not printed` entries have no
verdict, a median study uses the order-statistic interval, the config's `published:` block is
checked and wins over the papers' values, and the tables step writes
`{study}.reproduction.csv`."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
import yaml
from test_results import frame_of

from blurbflow import steps
from blurbflow.results.published_values import check_published, study_published
from blurbflow.results.reproduction import (
    COLUMNS,
    mean_interval,
    median_interval,
    reproduction_rows,
    reproduction_summary,
)
from blurbflow.results.tables import study_table
from blurbflow.util.errors import ConfigError

from workflow_helpers import REPO

T_975_2 = 4.302652729749464  # Student's t, 97.5th percentile, 2 degrees of freedom

SCORES = {
    ("gad", "a"): [60.0, 61.0, 95.0],
    ("gad", "b"): [64.0, 65.0, 66.0],
    ("biosses", "a"): [70.0, 71.0, 99.0],
    ("biosses", "b"): [75.0],  # one ok seed, one diverged
}


def cells():
    rows = [
        ("m", task, recipe, "h", seed, 50.0, value, "ok")
        for (task, recipe), values in SCORES.items()
        for seed, value in enumerate(values, start=1)
    ]
    rows.append(("m", "biosses", "b", "h", 2, math.nan, math.nan, "diverged"))
    return frame_of(rows)


def study(values=None, statistic="mean", decimals=None, margin=None):
    entry = {
        "models": ["m"],
        "tasks": ["gad", "biosses"],
        "recipes": ["a", "b"],
        "seeds": 3,
        "statistic": statistic,
        "table": {"rows": "task", "columns": ["recipe"]},
    }
    if margin is not None:
        entry["reproduction_margin"] = margin
    if values is not None:
        entry["published"] = {"source": "stand-in", "values": values}
        if decimals is not None:
            entry["published"]["decimals"] = decimals
    return entry


PUBLISHED = {
    "gad": {"a": 72.0, "b": 70.0},
    "biosses": {"a": "not printed", "b": 75.0},
    "blurb": {"b": 70.0},
}


def by_entry(frame: pd.DataFrame) -> dict:
    return {(r["row"], r["column"]): r for r in frame.to_dict("records")}


# --- intervals --------------------------------------------------------------------------------


def test_the_mean_interval_of_known_seeds_is_the_t_interval():
    low, high = mean_interval([1.0, 2.0, 3.0])  # mean 2, sample std 1
    assert low == pytest.approx(2 - T_975_2 / math.sqrt(3))
    assert high == pytest.approx(2 + T_975_2 / math.sqrt(3))
    assert mean_interval([5.0, 5.0]) == (5.0, 5.0)
    assert mean_interval([5.0]) is None and mean_interval([]) is None


def test_the_median_interval_is_the_order_statistic_interval_with_its_coverage():
    ten = [float(v) for v in range(10, 0, -1)]  # unsorted on purpose
    assert median_interval(ten) == (2.0, 9.0, pytest.approx(1 - 2 * 11 / 1024))  # k = 2
    six = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert median_interval(six) == (1.0, 6.0, pytest.approx(1 - 2 / 64))  # k = 1, 96.9%
    # five seeds or fewer never reach 95%: the range, with its smaller exact coverage
    assert median_interval([3.0, 1.0, 2.0, 5.0, 4.0]) == (1.0, 5.0, 0.9375)
    assert median_interval([1.0, 2.0]) == (1.0, 2.0, 0.5)
    assert median_interval([1.0]) is None


# --- rows -------------------------------------------------------------------------------------


def test_rows_set_ours_beside_the_published_value_with_interval_and_verdict():
    frame = reproduction_rows(cells(), "s", study(PUBLISHED))
    assert list(frame.columns) == COLUMNS
    assert [(r, c) for r, c in zip(frame["row"], frame["column"], strict=True)] == [
        ("gad", "a"),
        ("gad", "b"),
        ("biosses", "a"),
        ("biosses", "b"),
        ("BLURB-style average (re, sts)", "a"),
        ("BLURB-style average (re, sts)", "b"),
    ]
    rows = by_entry(frame)
    table = study_table(cells(), "s", study())
    for (row, column), entry in rows.items():  # ours is exactly the table's number
        assert entry["ours"] == table.loc[row, (column, "mean")]
        assert entry["margin"] == 1.0  # the default
    half = T_975_2 * 1.0 / math.sqrt(3)  # gad b: seeds 64, 65, 66
    gad_b = rows[("gad", "b")]
    assert (gad_b["low"], gad_b["high"]) == (pytest.approx(65 - half), pytest.approx(65 + half))
    assert gad_b["level"] == 0.95 and gad_b["n"] == 3
    # published 70: our interval ends at 67.48, below 70 − 1 (the margin) − 0.5 (printed unit)
    assert gad_b["delta"] == pytest.approx(-5.0) and gad_b["verdict"] == "differs"
    assert pd.isna(gad_b["seeds_to_decide"]) and pd.isna(gad_b["note"])
    gad_a = rows[("gad", "a")]  # mean 72 = published, sd 19.9: far too wide to say
    assert gad_a["delta"] == 0.0 and gad_a["verdict"] == "inconclusive"
    assert gad_a["seeds_to_decide"] > 1000  # the interval must shrink within ±0.5
    biosses_a = rows[("biosses", "a")]  # not printed: no verdict
    assert math.isnan(biosses_a["published"]) and pd.isna(biosses_a["verdict"])
    assert biosses_a["low"] < biosses_a["ours"] < biosses_a["high"]
    biosses_b = rows[("biosses", "b")]  # one ok seed: no interval, too few seeds to say
    assert biosses_b["n"] == 1 and math.isnan(biosses_b["low"])
    assert biosses_b["verdict"] == "inconclusive" and pd.isna(biosses_b["seeds_to_decide"])
    assert biosses_b["note"] == "fewer than 2 ok seeds: no interval"
    assert biosses_b["delta"] == 0.0
    blurb_b = rows[("BLURB-style average (re, sts)", "b")]  # biosses b has one seed
    assert blurb_b["task"] == "blurb" and math.isnan(blurb_b["low"])
    assert blurb_b["verdict"] == "inconclusive"
    # and the stand-in's own task values (70, 75) give 72.5, not its printed 70
    assert blurb_b["note"] == (
        "fewer than 2 ok seeds in a task: no interval; "
        "contradicted: the paper's own task values give 72.5"
    )
    assert blurb_b["ours"] == pytest.approx((65.0 + 75.0) / 2)
    blurb_a = rows[("BLURB-style average (re, sts)", "a")]  # not printed, but an interval
    assert blurb_a["low"] < blurb_a["ours"] < blurb_a["high"] and pd.isna(blurb_a["verdict"])
    assert frame.attrs == {"source": "stand-in", "decimals": 0, "statistic": "mean"}
    assert reproduction_summary(frame) == {
        "entries": 6,
        "published": 4,
        "reproduced": 0,
        "differs": 1,
        "inconclusive": 3,
        "not_comparable": 0,
        "not_printed": 2,
    }


@pytest.mark.parametrize(
    "value, verdict",
    [
        (65.4, "reproduced"),
        (65.5, "inconclusive"),  # 65.55 may be what was printed: 65.55 − 3 > 62.516
        (64.6, "reproduced"),
        (64.5, "inconclusive"),
        (70.5, "inconclusive"),  # 70.45 − 3 = 67.45 is inside the interval
        (70.6, "differs"),
    ],
)
def test_the_printed_value_stands_for_all_that_round_to_it(value, verdict):
    # gad b's interval is [62.516, 67.484]; printed to one decimal, 65.4 may be 65.35 to 65.45,
    # all within ± 3 of every value in the interval; gad's margin overrides the default
    margin = {"default": 1.0, "gad": 3.0}
    frame = reproduction_rows(cells(), "s", study({"gad": {"b": value}}, decimals=1, margin=margin))
    assert by_entry(frame)[("gad", "b")]["verdict"] == verdict
    assert by_entry(frame)[("gad", "b")]["margin"] == 3.0
    assert by_entry(frame)[("biosses", "b")]["margin"] == 1.0


def test_a_median_study_compares_its_medians_with_the_order_statistic_interval():
    values = {"gad": {"a": 94.0, "b": 67.5}, "blurb": {"a": 66.0}}
    frame = reproduction_rows(cells(), "s", study(values, "median"))
    rows = by_entry(frame)
    assert rows[("gad", "a")]["ours"] == 61.0  # the median, as the median table shows
    assert (rows[("gad", "a")]["low"], rows[("gad", "a")]["high"]) == (60.0, 95.0)
    assert rows[("gad", "a")]["level"] == 0.75 and rows[("gad", "a")]["verdict"] == "inconclusive"
    assert pd.isna(rows[("gad", "a")]["seeds_to_decide"])  # a t-figure only for means
    assert rows[("gad", "b")]["verdict"] == "differs"  # range 64..66, printed 67.5 ± 1.05
    blurb = rows[("BLURB-style average (re, sts)", "a")]  # medians' intervals do not add up
    assert pd.isna(blurb["verdict"]) and blurb["note"] == "a median's BLURB score has no interval"
    assert reproduction_summary(frame)["not_comparable"] == 1
    assert frame.attrs["statistic"] == "median"


def test_a_study_without_published_values_has_our_numbers_alone():
    frame = reproduction_rows(cells(), "s", study())
    assert frame["published"].isna().all() and frame["verdict"].isna().all()
    assert frame["ours"].notna().all() and frame.attrs["source"] == ""
    assert frame["note"].isna().all()
    assert reproduction_summary(frame)["published"] == 0


# --- where the values come from ---------------------------------------------------------------

CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())


def test_a_transcribed_study_gets_the_papers_values_and_the_config_wins():
    gu6 = CONFIG["studies"]["gu-table6"]
    found = study_published("gu-table6", gu6)
    assert found["source"] == "Gu et al. 2021, Table 6, section 6.3" and found["decimals"] == 2
    assert found["values"][("biosses", "pubmedbert", "biosses")] == 92.30
    assert found["values"][("blurb", "pubmedbert", "blurb")] == 81.10
    mine = {**gu6, "published": {"source": "mine", "values": {"biosses": {"pubmedbert": 90.0}}}}
    merged = study_published("gu-table6", mine)
    assert merged["values"][("biosses", "pubmedbert", "biosses")] == 90.0
    assert merged["values"][("bc5chem", "pubmedbert", "bc5chem")] == 93.33
    assert merged["source"] == "Gu et al. 2021, Table 6, section 6.3; mine"
    # the same name with another layout is not the paper's table
    other = {**gu6, "models": ["pubmedbert"], "table": {"rows": "model", "columns": ["task"]}}
    assert study_published("gu-table6", other)["values"] == {}


def test_the_config_block_is_checked_and_an_entry_the_table_does_not_have_is_an_error(capsys):
    config = {"models": {"m": {}}, "recipes": {"a": {}, "b": {}}}
    assert check_published(study(PUBLISHED), config) is None
    for values, message in [
        ({"gad": {"a": "n/a"}}, "values.gad.a: a published value is a number or 'not printed'"),
        ({"gad": 1.0}, "values.gad: a mapping column → value"),
        ({"gad": {"a": {"biosses": 1.0}}}, "names this entry's task 'gad' alone"),
        ({"gad": {"a / b": 1.0}}, "values.gad.a / b: a column key is the values of recipe"),
        # a typo or a renamed recipe: no longer a warning with the value left out
        (
            {"gda": {"a": 1.0}},
            "values.gda.a: the row names task 'gda', which the config does not know "
            "(did you mean 'gad'?); the table's tasks are gad, biosses, blurb",
        ),
        ({"gad": {"c": 2.0}}, "values.gad.c: the column names recipe 'c', which the config"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            check_published(study(values), config)
    # a narrowed study (a later config file lists fewer recipes): its other entries are left
    # out, saying so
    narrowed = {**study(PUBLISHED), "recipes": ["a"]}
    assert check_published(narrowed, config) is None
    assert "values.gad.b: the column names recipe 'b', which this study does not list" in (
        capsys.readouterr().err
    )


def test_the_demo_config_gives_stand_in_values_the_schema_accepts():
    from blurbflow.config.validate import check_config

    demo = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    check_config(demo, schema)
    check_published(demo["studies"]["demo"], demo)
    found = study_published("demo", demo["studies"]["demo"])
    assert "stand-in values, not from a paper" in found["source"]
    assert len(found["values"]) == 12 and found["decimals"] == 1


# --- the tables step --------------------------------------------------------------------------


def test_the_tables_step_writes_the_reproduction_csv_beside_the_table(tmp_path):
    cells().to_parquet(tmp_path / "cells.parquet")
    config = {"studies": {"with": study(PUBLISHED), "without": study()}}
    steps.tables(config, str(tmp_path / "cells.parquet"), str(tmp_path / "tables"))
    for name in ("with", "without"):
        assert (tmp_path / "tables" / f"{name}.csv").exists()
        csv = pd.read_csv(tmp_path / "tables" / f"{name}.reproduction.csv")
        assert list(csv.columns) == COLUMNS and len(csv) == 6
        assert csv["ours"].notna().all()
    with_values = pd.read_csv(tmp_path / "tables" / "with.reproduction.csv")
    assert with_values["published"].notna().sum() == 4
    assert with_values["verdict"].tolist()[:2] == ["inconclusive", "differs"]
    text = (tmp_path / "tables" / "with.reproduction.csv").read_text().splitlines()
    assert text[1].endswith(",1.0,inconclusive,6103,")  # whole seeds; gad a: no note
    without = pd.read_csv(tmp_path / "tables" / "without.reproduction.csv")
    assert without["published"].isna().all() and without["verdict"].isna().all()
