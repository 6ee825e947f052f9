"""Where a finished `make demo` run spent its time (the demo must stay under 10 minutes).

Reads a working directory after a Snakemake run: `.snakemake/metadata` (each output's rule,
start and end time), and every cell's result.json (`wall_seconds` and the per-evaluation
`seconds`). Prints per rule the jobs, summed and longest job seconds and the span from the first
job's start to the last one's end; per fine-tuning job, the seconds outside its cells (process
start-up, imports, identity hashing, verification); per task, a cell's time split into its
evaluated epochs and the rest (setup: model load, data; writing predictions).

    .venv/bin/python benchmarks/demo_profile.py [WORKDIR]  # default: the current directory

The machine's load changes every wall-clock number: note `uptime` beside the run, and compare a
stage before and after a change with `--profile` (cProfile of one stage in this process, CPU
seconds too) rather than whole-demo repeats:

    .venv/bin/python benchmarks/demo_profile.py WORKDIR --profile cell --task pubmedqa
    .venv/bin/python benchmarks/demo_profile.py WORKDIR --profile report

`--smoke` makes its own tiny finished run in a scratch folder and reads it: Snakemake runs a
stand-in workflow (a rule per step; each demo job's seeds.json touched, its cells' result.json
written beforehand as benchmarks/aggregate.py writes them, seconds and all; `aggregate` the real
load_cell and write_cells) for config/demo.yaml's 20 cells; then the tables above and
`--profile report`.

To check that a change leaves results alone, re-run the cells against the same resources/:
rebuilding the demo model gives another vocabulary (tokenizers' WordPiece trainer is not
deterministic, huggingface/tokenizers#1794), hence other numbers, whatever the change.
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def rule_jobs(workdir: Path) -> list[dict]:
    """One record per job: its rule, start, end and outputs."""
    jobs: dict[tuple, dict] = {}
    for entry in (workdir / ".snakemake" / "metadata").iterdir():
        try:
            meta = json.loads(entry.read_text())
        except (OSError, ValueError):
            continue
        if not meta.get("starttime") or not meta.get("endtime"):
            continue
        name = base64.b64decode(entry.name.replace("@", "/")).decode(errors="replace")
        key = (meta["rule"], meta.get("job_hash"))  # a job's outputs share its hash
        job = jobs.setdefault(
            key,
            {
                "rule": meta["rule"],
                "start": meta["starttime"],
                "end": meta["endtime"],
                "outputs": [],
            },
        )
        job["start"] = min(job["start"], meta["starttime"])
        job["end"] = max(job["end"], meta["endtime"])
        job["outputs"].append(name)
    return sorted(jobs.values(), key=lambda j: j["start"])


def print_rules(jobs: list[dict]) -> None:
    if not jobs:
        print("no job metadata (run the demo in WORKDIR first)")
        return
    first, last = min(j["start"] for j in jobs), max(j["end"] for j in jobs)
    by_rule: dict[str, list[dict]] = defaultdict(list)
    for job in jobs:
        by_rule[job["rule"]].append(job)
    print(f"{'rule':<22}{'jobs':>5}{'sum s':>9}{'max s':>8}{'from s':>8}{'to s':>8}")
    for rule, group in sorted(by_rule.items(), key=lambda r: min(j["start"] for j in r[1])):
        seconds = [j["end"] - j["start"] for j in group]
        print(
            f"{rule:<22}{len(group):>5}{sum(seconds):>9.1f}{max(seconds):>8.1f}"
            f"{min(j['start'] for j in group) - first:>8.1f}"
            f"{max(j['end'] for j in group) - first:>8.1f}"
        )
    print(f"first job start to last job end: {last - first:.1f} s")


def print_cells(workdir: Path, jobs: list[dict]) -> None:
    cells = defaultdict(list)
    for path in sorted((workdir / "results" / "cells").glob("*/*/*/*/seed*/result.json")):
        result = json.loads(path.read_text())
        if "wall_seconds" in result:
            cells[path.parent.parent].append(result)
    if not cells:
        return
    print("\nper fine-tuning job: job seconds, its cells' wall_seconds, the rest (start-up)")
    overheads = []
    for job in (j for j in jobs if j["rule"] == "finetune"):
        folder = workdir / Path(job["outputs"][0]).parent
        inside = sum(r["wall_seconds"] for r in cells.get(folder, []))
        total = job["end"] - job["start"]
        overheads.append(total - inside)
        print(
            f"  {folder.relative_to(workdir / 'results' / 'cells')}: {total:.1f} "
            f"{inside:.1f} {total - inside:.1f}"
        )
    if overheads:
        print(f"  outside the cells: {sum(overheads):.1f} s over {len(overheads)} jobs")
    print("\nper task: cells, median wall s, median evaluated-epoch s, median rest s")
    by_task = defaultdict(list)
    for results in cells.values():
        for result in results:
            by_task[result["cell"]["task"]].append(result)
    for task, results in sorted(by_task.items()):
        walls = [r["wall_seconds"] for r in results]
        epochs = [sum(e.get("seconds", 0) for e in r.get("epochs") or []) for r in results]
        rest = [w - e for w, e in zip(walls, epochs, strict=True)]
        print(
            f"  {task:<12}{len(results):>3}{statistics.median(walls):>9.1f}"
            f"{statistics.median(epochs):>9.1f}{statistics.median(rest):>9.1f}"
        )


def profile(workdir: Path, stage: str, task: str, out: Path, epochs: int | None = None) -> None:
    """cProfile one stage against WORKDIR's demo outputs (into a scratch folder)."""
    os.chdir(workdir)
    sys.path.insert(0, str(workdir / "src"))
    if stage == "cell":
        from blurbflow.options import CellOptions
        from blurbflow.train.cell import train_cell

        result_dir = next((workdir / "results" / "cells").glob(f"*/{task}/*/*/seed1"))
        recorded = json.loads((result_dir / "result.json").read_text())["options"]
        options = CellOptions.from_dict(recorded, where=str(result_dir / "result.json"))
        if epochs:
            options = options.replace(epochs=epochs)
        encoded = next((workdir / "resources" / "tokenized" / options.model / task).iterdir())
        scratch = Path("/tmp") / f"demo_profile_{task}" / "seed1" / "result.json"
        call = lambda: train_cell(  # noqa: E731
            options, encoded, workdir / "resources" / "data" / task, scratch
        )
    elif stage == "report":
        import pandas as pd
        import yaml

        from blurbflow.report.render import render_report

        config = yaml.safe_load((workdir / "config" / "demo.yaml").read_text())
        cells = pd.read_parquet(workdir / "results" / "cells.parquet")
        call = lambda: render_report(cells, config["studies"], "/tmp/demo_profile.html", {})  # noqa: E731
    else:
        raise SystemExit(f"--profile: unknown stage {stage!r} (cell or report)")
    clock, cpu = time.monotonic(), time.process_time()
    profiler = cProfile.Profile(time.process_time)  # CPU seconds: other load does not count
    profiler.runcall(call)
    profiler.dump_stats(str(out))
    print(f"{stage}: {time.monotonic() - clock:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")
    pstats.Stats(str(out)).sort_stats("cumulative").print_stats(40)


# The stand-in workflow of --smoke: the demo's job folders (jobs.json), a real Snakemake run.
SMOKE_SNAKEFILE = """
import json
from pathlib import Path
from blurbflow.results.aggregate import write_cells
from common import load_cells  # benchmarks/common.py (its folder on sys.path: smoke_run)

JOBS = json.loads(Path("jobs.json").read_text())  # job folder -> its task and result.json files

rule all:
    input: "results/cells.parquet"

rule prepare:
    output: "resources/data/{task}/stats.json"
    shell: "echo '{{}}' > {output}"

rule finetune:
    input: lambda w: f"resources/data/{JOBS[w.job]['task']}/stats.json"
    output: "{job}/seeds.json"
    wildcard_constraints: job="results/cells/.+"
    shell: "touch {output}"

rule aggregate:
    input: [f"{job}/seeds.json" for job in JOBS]
    output: "results/cells.parquet"
    run:
        paths = [Path(path) for job in JOBS.values() for path in job["results"]]
        write_cells(load_cells(paths), Path(output[0]))
"""


def smoke_run(workdir: Path) -> Path:
    """A tiny finished demo in `workdir` (see the module's --smoke)."""
    import random

    import yaml
    from aggregate import synthetic_result  # benchmarks/aggregate.py

    from blurbflow.config import expand_cells

    repo = Path(__file__).resolve().parents[1]
    (workdir / "config").mkdir(parents=True)
    shutil.copy(repo / "config" / "demo.yaml", workdir / "config" / "demo.yaml")
    config = yaml.safe_load((workdir / "config" / "demo.yaml").read_text())
    jobs: dict[str, dict] = {}
    rng = random.Random(0)
    for cell in expand_cells(config).values():
        path = workdir / cell.path / "result.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(synthetic_result(cell, rng)))
        job = jobs.setdefault(str(Path(cell.path).parent), {"task": cell.task, "results": []})
        job["results"].append(str(path))
    (workdir / "jobs.json").write_text(json.dumps(jobs))
    here = f"import sys\nsys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
    (workdir / "Snakefile").write_text(here + SMOKE_SNAKEFILE)
    snakemake = Path(sys.executable).parent / "snakemake"
    run = subprocess.run(
        [str(snakemake), "--cores", "2", "--quiet", "all"],
        cwd=workdir,
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        raise SystemExit(f"the --smoke workflow failed:\n{run.stderr[-3000:]}")
    return workdir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workdir", nargs="?", default=".")
    parser.add_argument("--profile", choices=["cell", "report"])
    parser.add_argument("--task", default="pubmedqa")
    parser.add_argument("--out", default="/tmp/demo_profile.prof")
    parser.add_argument("--epochs", type=int, help="profile the cell with fewer epochs")
    parser.add_argument("--smoke", action="store_true", help="a tiny finished run of its own")
    args = parser.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory(prefix="blurbflow-demo-profile-") as tmp:
            workdir = smoke_run(Path(tmp))
            jobs = rule_jobs(workdir)
            print_rules(jobs)
            print_cells(workdir, jobs)
            profile(workdir, "report", args.task, workdir / "report.prof")
        return
    workdir = Path(args.workdir).resolve()
    if args.profile:
        profile(workdir, args.profile, args.task, Path(args.out), args.epochs)
        return
    jobs = rule_jobs(workdir)
    print_rules(jobs)
    print_cells(workdir, jobs)


if __name__ == "__main__":
    main()
