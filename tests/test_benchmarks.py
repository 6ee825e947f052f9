"""Every benchmark's `--smoke` mode (tiny sizes, generated data, a tiny BERT: seconds) runs as the
full one does and prints its table, so a change that breaks a benchmark fails here; a new
benchmark without a smoke test fails too. Each runs in a fresh interpreter with its scratch
files under the test's tmp_path (TMPDIR), never in the repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_slurm import cluster_answers

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
# imported by the benchmarks, no benchmark itself (gpu_*.py: parts of gpu.py's suite)
HELPERS = {"common.py", "gpu_runs.py", "gpu_trainer.py", "gpu_cell.py", "gpu_report.py"}
HELPERS.add("snakemake_floor.py")  # dag_scale.py's Snakemake-only floor

# (script, arguments after --smoke, a pattern its output must match: a table header or figure)
SMOKE = [
    ("adaptive_seeds.py", [], r"false-positive rate \(D = 0\), worst scenario: \d\.\d{3}"),
    ("aggregate.py", [], r"aggregation \+ tables \+ report of 1392 cells: \d+\.\d s"),
    ("common_epoch.py", [], r"entries 1, changed [01]: mean Δmean [+-]\d+\.\d\d points"),
    (
        "compile_cache.py",
        ["--out", "{tmp}/compile-cache.json"],
        r"\ncold\s+cold\s+\d+\.\d\d\s[^\n]+\nwarm\s+warm\s+\d+\.\d\d\s",
    ),
    (
        "dag_scale.py",
        [],
        r"planned exactly the 2 jobs \(4 cells\) of tinn-llrd[\s\S]+"
        r"2x the studies: (\d+) jobs, .+; Snakemake alone on \1 jobs of the same shape",
    ),
    ("demo_profile.py", [], r"rule\s+jobs\s+sum s\s+max s[\s\S]+per task: cells[\s\S]+report: "),
    # the GPU suite on the CPU: every part's code path, and a demo cell verified end to end
    (
        "gpu.py",
        ["--suite", "--out", "{tmp}/gpu.json"],
        r"\| train \| chemprot \| bert-base \| fp32 "
        r"\| no_cudnn \| padding_free \|[\s\S]+Demo cell .+: ok on cpu .+ result.json verified",
    ),
    ("job_start.py", [], r"process start to the script's first line, median of 1: \d+\.\d\d s"),
    ("padding_efficiency.py", [], r"all 11 sets\s+(\d\.\d{3}\s+){8}\| worst overlap ratio"),
    ("plan_accuracy.py", [], r"predicted \d+ jobs .*: median \|error\| \d+%"),
    ("slurm_scale.py", [], r"arrays\s+2\s+1\s+[\s\S]+tools called from inside jobs"),
    ("startup.py", [], r"first optimizer step, after imports\s+cached\s+\d+\.\d+"),
    ("startup.py", ["--entry"], r"script: \(after\)\s+\d+\.\d+ s"),
    ("throughput.py", [], r"HF Trainer \(group_by_length\)\s+\d+\.\d s/epoch"),
    ("verify_scale.py", [], r"stat check: 156 manifests[\s\S]+156 cells: sha256 of every"),
]


@pytest.mark.slow
@pytest.mark.bench_smoke
@pytest.mark.parametrize(
    ("script", "extra", "expected"),
    SMOKE,
    ids=[script + "".join(a for a in extra if a == "--entry") for script, extra, _ in SMOKE],
)
def test_benchmark_smoke(script, extra, expected, tmp_path):
    if script == "slurm_scale.py" and not cluster_answers():  # as tests/test_slurm.py
        if os.environ.get("BLURBFLOW_REQUIRE_SLURM") == "1":
            pytest.fail("BLURBFLOW_REQUIRE_SLURM=1 but no SLURM cluster answers")
        pytest.skip("no SLURM cluster answers (.ci/slurm/up.sh brings one up)")
    args = [arg.format(tmp=tmp_path) for arg in extra]
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--smoke", *args],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-5000:]
    assert re.search(expected, run.stdout), run.stdout[-5000:]


def test_every_benchmark_has_a_smoke_test():
    scripts = {path.name for path in BENCHMARKS.glob("*.py")} - HELPERS
    assert scripts == {script for script, _, _ in SMOKE}
