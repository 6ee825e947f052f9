"""Every BLURB set's split sizes are counted against Gu et al.'s Table 3 on the real files
(tests/test_data_download.py), or the fidelity map says why not; a count that differs is stated
there with its figure. Fast: reads the tables of tests/blurb_sizes.py and docs/fidelity.md."""

from __future__ import annotations

from blurb_sizes import (
    BLURB_SETS,
    ENTITY_MENTIONS,
    INSTANCES,
    UNCOUNTED,
    data_splits_row,
    size_problems,
)

from workflow_helpers import REPO

ROW = data_splits_row((REPO / "docs/fidelity.md").read_text())
MEASURED = {**ENTITY_MENTIONS, **INSTANCES}


def test_every_blurb_set_is_counted_or_the_map_says_why_not():
    assert set(MEASURED) | set(UNCOUNTED) == set(BLURB_SETS)
    assert size_problems(MEASURED, UNCOUNTED, ROW) == []


def test_an_uncounted_or_differing_set_the_map_leaves_out_is_caught():
    assert size_problems(MEASURED, {}, ROW) == [
        "ebmpico: neither counted nor listed as uncounted",
        "bioasq: neither counted nor listed as uncounted",
    ]
    unnamed = ROW.replace("**EBM PICO**", "EBM PICO")
    assert size_problems(MEASURED, UNCOUNTED, unnamed) == [
        "ebmpico: the Data splits row does not name **EBM PICO**"
    ]
    counted = {**MEASURED, "hoc": (1295, 186, 370)}  # a count off Table 3, not stated
    assert size_problems(counted, UNCOUNTED, ROW) == [
        "hoc: the Data splits row does not name **hoc**",
        "hoc test: 370 (Table 3: 371) not stated",
    ]
