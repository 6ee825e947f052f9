"""Adaptive seeds through `snakemake --profile slurm` (issue 22): the config of
tests/test_adaptive_seeds.py on the CI's single-node SLURM cluster (.ci/slurm/up.sh): every
round's fine-tuning jobs are SLURM jobs, the checkpoint decides on the submitting host, the rounds
run by themselves and a second run trains nothing. Skipped where no cluster answers, unless
BLURBFLOW_REQUIRE_SLURM=1."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from test_adaptive_seeds import FAULTS, adaptive_config
from test_slurm import SLURM, cluster_answers  # the CI cluster's account, QOSes and GPUs

from tiny_project import tiny_project
from workflow_helpers import snakemake

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not cluster_answers() and os.environ.get("BLURBFLOW_REQUIRE_SLURM") != "1",
        reason="no SLURM cluster answers (.ci/slurm/up.sh brings one up)",
    ),
]


def test_the_rounds_run_on_slurm_and_a_second_run_trains_nothing(tmp_path):
    assert cluster_answers(), "BLURBFLOW_REQUIRE_SLURM=1 but no SLURM cluster answers"
    workdir = tiny_project(tmp_path)
    config = {**adaptive_config(), "slurm": SLURM}
    (workdir / "config/tiny.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    args = ("all", "--profile", "slurm", "--slurm-init-seconds-before-status-checks", "2")
    args += ("--configfile", "config/tiny.yaml")
    first = snakemake(workdir, *args, env=FAULTS)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "rule finetune_round" in first.stdout + first.stderr
    rounds = sorted((workdir / "results/adaptive/s").glob("round*.json"))
    assert [p.name for p in rounds] == ["round1.json", "round2.json"]
    last = json.loads(rounds[-1].read_text())
    assert last["done"] and sorted(last["seeds"].values()) == [2, 3, 3]
    second = snakemake(workdir, *args, env=FAULTS)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Nothing to be done" in second.stdout + second.stderr
