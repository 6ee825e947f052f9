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
import statistics
import sys
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workdir", nargs="?", default=".")
    parser.add_argument("--profile", choices=["cell", "report"])
    parser.add_argument("--task", default="pubmedqa")
    parser.add_argument("--out", default="/tmp/demo_profile.prof")
    parser.add_argument("--epochs", type=int, help="profile the cell with fewer epochs")
    args = parser.parse_args()
    workdir = Path(args.workdir).resolve()
    if args.profile:
        profile(workdir, args.profile, args.task, Path(args.out), args.epochs)
        return
    jobs = rule_jobs(workdir)
    print_rules(jobs)
    print_cells(workdir, jobs)


if __name__ == "__main__":
    main()
