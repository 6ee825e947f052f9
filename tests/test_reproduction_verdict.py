"""The reproduction verdict (results/verdict.py) on hand-made seeds: reproduced, differs and
inconclusive against a published value and a margin, the seeds that would decide an
inconclusive entry (checked against scipy's t quantiles by hand), a BLURB score's interval from
its tasks' seeds, the margin's per-task override, the counts of a study's verdicts, and a
printed BLURB score that the paper's own task values contradict (Tinn Table 9's 82.75)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import yaml
from scipy.stats import t
from test_results import frame_of

from blurbflow.report.reproduction import reproduction_view
from blurbflow.results.reproduction import reproduction_rows, reproduction_summary
from blurbflow.results.verdict import (
    blurb_interval,
    blurb_weights,
    contradiction,
    seeds_to_decide,
    study_margin,
    verdict,
)

from workflow_helpers import REPO


def t_interval(values):
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half, sd


# three hand-made seed sets of one task (gad), printed value 80.0 (one decimal: u = 0.05)
TIGHT = [79.8, 80.0, 80.2]  # mean 80.0, sd 0.2: interval [79.50, 80.50], within 80 ± 0.95
FAR = [84.0, 84.5, 85.0]  # mean 84.5, sd 0.5: interval [83.26, 85.74], above 81.05
WIDE = [78.0, 80.5, 83.0]  # mean 80.5, sd 2.5: interval [74.29, 86.71], overlaps both


def test_the_three_verdicts_of_hand_made_seeds():
    low, high, _ = t_interval(TIGHT)
    assert (low, high) == (pytest.approx(79.50317, abs=1e-4), pytest.approx(80.49683, abs=1e-4))
    assert verdict(80.0, low, high, margin=1.0, unit=0.05) == "reproduced"
    low, high, _ = t_interval(FAR)
    assert low == pytest.approx(83.2579, abs=1e-3) and low > 80.0 + 0.05 + 1.0
    assert verdict(80.0, low, high, margin=1.0, unit=0.05) == "differs"
    low, high, _ = t_interval(WIDE)
    assert verdict(80.0, low, high, margin=1.0, unit=0.05) == "inconclusive"
    # a wider margin reproduces what a narrow one calls different, never the reverse
    assert verdict(80.0, *t_interval(FAR)[:2], margin=6.0, unit=0.05) == "reproduced"
    assert verdict(80.0, None, None, margin=1.0, unit=0.05) == "inconclusive"  # no interval
    # the printed unit counts against the verdict: 80.0 may stand for 79.95 or 80.05
    assert verdict(80.0, 79.04, 80.96, margin=1.0, unit=0.0) == "reproduced"
    assert verdict(80.0, 79.04, 80.96, margin=1.0, unit=0.05) == "inconclusive"
    assert verdict(80.0, 81.02, 81.5, margin=1.0, unit=0.0) == "differs"
    assert verdict(80.0, 81.02, 81.5, margin=1.0, unit=0.05) == "inconclusive"


def test_the_seeds_to_decide_an_inconclusive_entry_by_hand():
    # WIDE: mean 80.5, sd 2.5, published 80.0 ± 1 printed to 0.1: the interval must shrink to
    # a half-width below (1 − 0.05) − 0.5 = 0.45
    gap, sd = 0.45, t_interval(WIDE)[2]
    assert sd == pytest.approx(2.5)
    by_hand = next(n for n in range(2, 10_000) if t.ppf(0.975, n - 1) * sd / math.sqrt(n) < gap)
    assert by_hand == 121  # t(0.975, 120) · 2.5 / √121 = 0.4500…, just below; 120 is not
    assert t.ppf(0.975, 119) * sd / math.sqrt(120) >= gap
    assert seeds_to_decide({"gad": WIDE}, 0.5, margin=1.0, unit=0.05) == by_hand
    # deciding `differs`: mean 82.5 against 80.0: the gap is 2.5 − 1.05 = 1.45
    shifted = [v + 2.0 for v in WIDE]
    by_hand = next(n for n in range(2, 100) if t.ppf(0.975, n - 1) * sd / math.sqrt(n) < 1.45)
    assert by_hand == 14  # t(0.975, 13) · 2.5 / √14 = 1.443; with 13 seeds 1.511
    assert seeds_to_decide({"gad": shifted}, 2.5, margin=1.0, unit=0.05) == by_hand
    # on the band's edge no number of seeds decides; no spread or one seed gives no figure
    assert seeds_to_decide({"gad": WIDE}, 1.0, margin=1.0, unit=0.05) is None
    assert seeds_to_decide({"gad": [80.0, 80.0]}, 0.5, margin=1.0, unit=0.05) is None
    assert seeds_to_decide({"gad": [80.0]}, 0.5, margin=1.0, unit=0.05) is None


def test_a_blurb_interval_combines_its_tasks_seeds():
    # gad (re) and biosses (sts): weights ½ each; with hoc (classification) and chemprot (re)
    # a third each, gad and chemprot halved
    assert blurb_weights(["gad", "biosses"]) == {"gad": 0.5, "biosses": 0.5}
    weights = blurb_weights(["gad", "chemprot", "biosses", "hoc"])
    assert weights == pytest.approx(
        {"gad": 1 / 6, "chemprot": 1 / 6, "biosses": 1 / 3, "hoc": 1 / 3}
    )
    gad, biosses = [60.0, 62.0, 64.0], [70.0, 75.0]  # variances 4 and 12.5
    a, b = 0.25 * 4 / 3, 0.25 * 12.5 / 2
    df = (a + b) ** 2 / (a * a / 2 + b * b / 1)  # Welch–Satterthwaite
    half = t.ppf(0.975, df) * math.sqrt(a + b)
    low, high, level = blurb_interval({"gad": gad, "biosses": biosses}, 67.25)
    assert (low, high, level) == (pytest.approx(67.25 - half), pytest.approx(67.25 + half), 0.95)
    assert blurb_interval({"gad": gad, "biosses": [70.0]}, 67.25) is None
    assert blurb_interval({"gad": [1.0, 1.0], "biosses": [2.0, 2.0]}, 1.5) == (1.5, 1.5, 0.95)
    # seeds to decide a BLURB score: per task, S² = Σ w² s², df = (Σ w²s²)² / Σ (w²s²)² · (n − 1)
    terms = [0.25 * 4, 0.25 * 12.5]
    s, ratio = math.sqrt(sum(terms)), sum(terms) ** 2 / sum(x * x for x in terms)
    by_hand = next(n for n in range(3, 1000) if t.ppf(0.975, ratio * (n - 1)) * s / n**0.5 < 0.4)
    found = seeds_to_decide({"gad": gad, "biosses": biosses}, 0.5, margin=1.0, unit=0.1)
    assert found == by_hand


def test_the_margin_is_the_studys_with_a_per_task_override():
    assert study_margin({}, "gad") == 1.0
    assert study_margin({"reproduction_margin": 0.5}, "gad") == 0.5
    margins = {"reproduction_margin": {"default": 2.0, "biosses": 5.0, "blurb": 1.5}}
    assert [study_margin(margins, t) for t in ("gad", "biosses", "blurb")] == [2.0, 5.0, 1.5]
    assert study_margin({"reproduction_margin": {"biosses": 5.0}}, "gad") == 1.0
    with pytest.raises(ValueError, match="above 0"):
        study_margin({"reproduction_margin": 0}, "gad")


def test_a_studys_rows_count_each_verdict():
    seeds = {"a": TIGHT, "b": FAR, "c": WIDE, "d": [80.0]}
    cells = frame_of(
        [
            ("m", "gad", recipe, "h", seed, 50.0, value, "ok")
            for recipe, values in seeds.items()
            for seed, value in enumerate(values, start=1)
        ]
    )
    study = {
        "models": ["m"],
        "tasks": ["gad"],
        "recipes": list(seeds),
        "seeds": 3,
        "table": {"rows": "recipe", "columns": ["task"]},
        "published": {
            "source": "hand-made",
            "decimals": 1,
            "values": {r: {"gad": 80.0} for r in seeds},
        },
    }
    frame = reproduction_rows(cells, "s", study)
    verdicts = dict(zip(frame["row"], frame["verdict"], strict=True))
    assert verdicts == {"a": "reproduced", "b": "differs", "c": "inconclusive", "d": "inconclusive"}
    needed = dict(zip(frame["row"], frame["seeds_to_decide"], strict=True))
    assert needed["c"] == 121 and pd.isna(needed["a"]) and pd.isna(needed["d"])
    assert reproduction_summary(frame) == {
        "entries": 4,
        "published": 4,
        "reproduced": 1,
        "differs": 1,
        "inconclusive": 2,
        "not_comparable": 0,
        "not_printed": 0,
    }


def test_a_printed_blurb_score_its_tasks_contradict_is_flagged():
    # gad (re) 80.00 and biosses (sts) 90.00 give 85.00; two decimals: both rounded, 0.01 apart
    assert contradiction({"gad": 80.0, "biosses": 90.0}, 85.01, unit=0.005) is None
    note = contradiction({"gad": 80.0, "biosses": 90.0}, 85.75, unit=0.005)
    assert note == "contradicted: the paper's own task values give 85.00"
    assert contradiction({"gad": 80.0, "biosses": None}, 85.75, unit=0.005) is None


def test_tinn_table9s_optimal_blurb_is_flagged_in_the_reproduction_view():
    # Tinn Table 9 prints PubMedBERT-BASE's Optimal BioASQ and BLURB both as 82.75; its
    # thirteen printed tasks give 82.00 (tests/test_published.py)
    study = yaml.safe_load((REPO / "config.yaml").read_text())["studies"]["tinn-table9"]
    frame = reproduction_rows(frame_of([]), "tinn-table9", study)
    flagged = frame[frame["note"].fillna("").str.contains("contradicted")]
    assert list(zip(flagged["row"], flagged["column"], strict=True)) == [
        ("BLURB", "pubmedbert / optimal")
    ]
    assert flagged["published"].tolist() == [82.75]
    assert "the paper's own task values give 82.00" in flagged["note"].iloc[0]
    view = reproduction_view(frame, study)
    assert [(e["row"], e["column"]) for e in view["rows"] if e["contradicted"]] == [
        ("BLURB", "pubmedbert / optimal")
    ]
