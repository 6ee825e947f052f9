"""Every benchmark's `--smoke` mode (tiny sizes, generated data, a tiny BERT: seconds) runs as the
full one does and prints its table, so a change that breaks a benchmark fails here; a new
benchmark without a smoke test fails too. Each runs in a fresh interpreter with its scratch
files under the test's tmp_path (TMPDIR), never in the repository."""

from __future__ import annotations

import json
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
HELPERS = {"common.py"} | {path.name for path in BENCHMARKS.glob("gpu_*.py")}
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
    assert scripts == {script for script, _, _ in SMOKE} | {"gpu.py"}  # gpu.py: below


def gpu_plan():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import gpu_plan as plan
    finally:
        sys.path.remove(str(BENCHMARKS))
    return plan


def test_gpu_suite_plan_fits_its_budget():
    """benchmarks/gpu.py's parts as planned end within the budget on one H200; a part that
    would end past it is skipped."""
    plan = gpu_plan()
    assert plan.expected_total() <= plan.BUDGET_S
    assert plan.fits("default", 0.0, plan.BUDGET_S)
    assert not plan.fits("graphs", plan.BUDGET_S - 10, plan.BUDGET_S)


@pytest.mark.slow
@pytest.mark.bench_smoke
def test_gpu_suite_smoke(tmp_path):
    """The GPU suite on the CPU (tiny models): every part in fresh processes of its own, every
    row its second pass, the default part's rows the engine's CUDA default resolved by the
    code, and the targets read from them; a demo cell verified end to end."""
    import torch

    from blurbflow.options.engine import Settings
    from blurbflow.train import engine
    from blurbflow.train.step import CHECK_STEPS

    out = tmp_path / "gpu.json"
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu.py"), "--suite", "--smoke", "--out", str(out)],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-5000:]
    assert re.search(r"Demo cell .+: ok on cpu .+ result.json verified", run.stdout)
    result = json.loads(out.read_text())
    plan = gpu_plan()
    cache = "smoke: tests/test_benchmarks.py runs compile_cache.py --smoke apart"
    assert {n: e["status"] for n, e in result["parts"].items()} == {
        n: cache if n == "compile_cache" else "ok" for n in plan.NAMES
    }
    rows = result["rows"]
    assert {r["part"] for r in rows} == set(plan.NAMES) - {"checks", "compile_cache"}
    pids = {}
    for row in rows:
        pids.setdefault(row["part"], set()).add(row["pid"])
    assert sum(map(len, pids.values())) == len(set().union(*pids.values()))  # none shared
    assert result["pid"] not in set().union(*pids.values())
    assert [(g["processes"], len(g["pids"])) for g in result["concurrent"]] == [(1, 1), (2, 2)]
    assert all(r["pass"] == 2 and "first_pass_extra_s" in r for r in rows)

    cuda = torch.device("cuda")  # resolved as for a GPU, wherever it runs
    default = engine.result_fields(
        engine.resolve(
            Settings(), cuda, "bf16", "random", False, False, max_length=128, eval_batch_size=32
        )
    )
    assert result["default_policy"] == default
    a1, evals = (next(r for r in rows if r["part"] == "default" and r["what"] == w)
                 for w in ("train", "eval"))  # fmt: skip
    for row in (a1, evals):
        ran = {**row["engine"], "optimizer_kernel": None}  # Steps names the kernel it chose
        if ran["compiled"] == "eager":  # a smoke run's compiled rows
            ran["compiled"] = default["engine"]["compiled"]
        assert (row["attention_backend"], row["batch_shapes"], ran) == (
            default["attention_backend"],
            default["batch_shapes"],
            default["engine"],
        )
    assert evals["eval_batch_size"] == default["engine"]["eval_batch_size"]
    graphs = next(r for r in rows if r["part"] == "graphs")["engine"]
    assert (graphs["compiled"], graphs["compile_mode"]) == ("eager", "reduce-overhead")

    measured = {t["target"].split(",")[0].split(" (")[0]: t for t in result["targets"]}
    assert measured["one cell training"]["measured"] == a1["samples_per_s"]
    shapes = f"{default['batch_shapes']} ×{default['engine']['pad_multiple']}"
    assert shapes in measured["one cell training"]["target"]  # the default, as resolved
    assert measured["evaluation"]["measured"] == evals["samples_per_s"]
    a2 = next(r for r in rows if r["part"] == "concurrent" and r["processes"] == 1)
    b = next(r for r in rows if r["part"] == "trainer")
    ratio = (a1["samples_per_s"] + a2["samples_per_s"]) / 2 / b["samples_per_s"]
    assert measured["× HF Trainer"]["measured"] == round(ratio, 2)
    assert len(result["targets"]) == 7
    assert result["syncs"]["planned_sync_steps"] == [CHECK_STEPS]
