"""What many small jobs cost a SLURM cluster through `snakemake --profile slurm`: a generated
workflow of N independent jobs of one rule `tiny` (each sleeps `--seconds` and writes its start
and end time), run three ways on the same machine: the local executor (`--cores 2`), the project's
profile (slurm/profile.yaml) with one sbatch per job (`single`), and with `--slurm-array-jobs tiny`
(one sbatch per up to `slurm-array-limit` jobs): `arrays` with `--jobs N` and
`--max-jobs-per-timespan N/1s`, so that Snakemake hands the plugin all N ready jobs at once, and
`arrays-profile` with the profile's own `jobs` and `max-jobs-per-timespan`. The plugin (2.8.0)
holds back a batch of an array rule's jobs smaller than both the rule's other ready jobs and
`slurm-array-limit`, and never submits it (its issue 473): with the profile's 10 jobs a second
`arrays-profile` submits only the last batches and then waits for jobs that never run, until
`--stuck-timeout`. `sbatch`, `sacct`, `squeue`, `scontrol` and `sinfo` are counted by wrapper
scripts first on PATH, which log each call and run the real tool;
a call from inside a job (SLURM_JOB_ID set: the job-side Snakemake) is counted apart from the
main process's. Figures per mode: jobs, sbatch calls, submissions per second (jobs handed to
sbatch / seconds from first to last sbatch), status queries (sacct/squeue) of the main process,
scheduler calls per job on the node, and wall time from the first submission (local: the first
job's start) to the last job's end.

The jobs stand in for tiny fine-tuning jobs: the scheduler's side (submission, status checks, the
job-side Snakemake start-up) is what is measured; a job's own work is a sleep. The job-side start-up
of the project's own Snakefile on config.yaml is measured apart (docs/slurm.md).

Needs a cluster that answers (.ci/slurm/up.sh: account `blurbflow`, partition `debug`).

    .venv/bin/python benchmarks/slurm_scale.py [--jobs 300] [--seconds 1]
    .venv/bin/python benchmarks/slurm_scale.py --jobs 300 --submit-only   # submission side only
    .venv/bin/python benchmarks/slurm_scale.py --smoke   # 2 jobs as one array, nothing else

A mode that does not finish within `--timeout` seconds is reported as such (its jobs cancelled).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOLS = ("sbatch", "sacct", "squeue", "scontrol", "sinfo")
QUERIES = ("sacct", "squeue")

SNAKEFILE = """\
N = {jobs}

rule all:
    input: expand("out/{{i}}.txt", i=range(N))

rule tiny:
    output: "out/{{i}}.txt"
    resources: mem_mb=100, runtime=5, cpus_per_task=1, slurm_account="blurbflow",
        slurm_partition="debug"
    shell: "s=$(date +%s.%N); sleep {seconds}; echo $s $(date +%s.%N) > {{output}}"
"""

WRAPPER = """\
#!/bin/sh
echo "$(date +%s.%N) {tool} ${{SLURM_JOB_ID:+job}}${{SLURM_JOB_ID:-main}} $*" >> {log}
exec {real} "$@"
"""


def wrappers(folder: Path, log: Path) -> Path:
    """A folder of scripts named like SLURM's tools that log each call and run the real one."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    for tool in TOOLS:
        real = shutil.which(tool)
        if real is None:
            raise SystemExit(f"{tool} not on PATH: no SLURM here (.ci/slurm/up.sh)")
        script = bin_dir / tool
        script.write_text(WRAPPER.format(tool=tool, log=log, real=real))
        script.chmod(0o755)
    return bin_dir


def calls(log: Path) -> list[tuple[float, str, bool]]:
    if not log.exists():
        return []
    rows = []
    for line in log.read_text().splitlines():
        words = line.split()
        rows.append((float(words[0]), words[1], words[2].startswith("job")))
    return rows


def cancel(workdir: Path) -> None:
    """Cancel the jobs this mode left in the queue (those with its working folder)."""
    queue = subprocess.run(["squeue", "--me", "-h", "-o", "%i %Z"], capture_output=True, text=True)
    ids = [line.split()[0] for line in queue.stdout.splitlines() if line.endswith(str(workdir))]
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True)


def spans(workdir: Path) -> list[tuple[float, float]]:
    out = []
    for path in (workdir / "out").glob("*.txt"):
        start, end = path.read_text().split()
        out.append((float(start), float(end)))
    return out


def queued(workdir: Path) -> int:
    """Jobs of this mode SLURM holds (array tasks one by one) or has finished."""
    command = ["squeue", "--me", "-r", "-h", "-o", "%Z"]
    queue = subprocess.run(command, capture_output=True, text=True)
    waiting = sum(1 for line in queue.stdout.splitlines() if line == str(workdir))
    return waiting + len(list((workdir / "out").glob("*.txt")))


def submit_and_stop(args, workdir: Path, env: dict, jobs: int, timeout: int) -> tuple:
    """Run snakemake until SLURM holds all `jobs` jobs (or `timeout`), then stop it (SIGINT:
    Snakemake cancels its jobs) and cancel what is left: the submission side alone."""
    log = (workdir / "snakemake.log").open("w")  # not a pipe: a full one would stop snakemake
    process = subprocess.Popen(args, cwd=workdir, env=env, stdout=log, stderr=log)
    end = time.time() + timeout
    while process.poll() is None and time.time() < end and queued(workdir) < jobs:
        time.sleep(0.2)
    all_queued = time.time()
    rc = "submitted" if queued(workdir) >= jobs else "timeout"
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()
    cancel(workdir)
    (workdir / "all_queued").write_text(str(all_queued))
    return rc, (workdir / "snakemake.log").read_text()


def run_mode(
    mode: str,
    jobs: int,
    seconds: float,
    root: Path,
    timeout: int,
    submit_only: bool = False,
) -> dict:
    workdir = root / mode
    workdir.mkdir()
    (workdir / "Snakefile").write_text(SNAKEFILE.format(jobs=jobs, seconds=seconds))
    log = workdir / "calls.log"
    env = {**os.environ, "PATH": f"{wrappers(workdir, log)}:{os.environ['PATH']}"}
    args = [str(REPO / ".venv/bin/snakemake"), "--workflow-profile", "none", "all"]
    if mode == "local":
        args += ["--cores", "2"]
    else:
        args += ["--profile", str(REPO / "slurm"), "--slurm-init-seconds-before-status-checks", "2"]
    if mode.startswith("arrays"):
        args += ["--slurm-array-jobs", "tiny"]
    if mode == "arrays":  # every ready job selected at once (plugin issue 473: see below)
        args += ["--jobs", str(jobs), "--max-jobs-per-timespan", f"{jobs}/1s"]
    t0 = time.time()
    if submit_only and mode != "local":
        rc, err = submit_and_stop(args, workdir, env, jobs, timeout)
    else:
        try:
            run = subprocess.run(
                args, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout
            )
            rc, err = run.returncode, run.stderr
        except subprocess.TimeoutExpired as exc:
            rc, err = "timeout", (exc.stderr or b"").decode(errors="replace")
            cancel(workdir)
    total = time.time() - t0
    done = spans(workdir)
    rows = calls(log)
    main = [r for r in rows if not r[2]]
    sbatch = [t for t, tool, _ in main if tool == "sbatch"]
    first = min(sbatch) if sbatch else min((s for s, _ in done), default=t0)
    result = {
        "mode": mode,
        "rc": rc,
        "jobs": jobs if rc == "submitted" else len(done),
        "process_s": total,
        "wall_s": max((e for _, e in done), default=first) - first,
        "sbatch": len(sbatch),
        "submit_span_s": (max(sbatch) - min(sbatch)) if sbatch else 0.0,
        "queries": sum(1 for _, tool, _ in main if tool in QUERIES),
        "main_calls": len(main),
        "job_calls": len(rows) - len(main),
        "job_tools": sorted({tool for _, tool, job in rows if job}),
        "stderr_tail": (err or "")[-3000:],
    }
    # jobs handed to SLURM per second: from the first sbatch to the last (--submit-only: to
    # when SLURM held them all, array tasks counted one by one)
    marker = workdir / "all_queued"
    span = float(marker.read_text()) - first if marker.exists() else result["submit_span_s"]
    submitted = result["jobs"] if marker.exists() else len(sbatch)
    result["submit_per_s"] = submitted / span if span > 0 else float("nan")
    result["job_median_s"] = statistics.median(e - s for s, e in done) if done else float("nan")
    return result


def table(results: list[dict]) -> str:
    head = (
        f"{'mode':<14} {'jobs':>5} {'sbatch':>6} {'jobs/s submitted':>16} {'sacct+squeue':>12} "
        f"{'calls/job on node':>17} {'first submit→last done':>22} {'process':>8}"
    )
    lines = [head]
    for r in results:
        per_job = r["job_calls"] / r["jobs"] if r["jobs"] else float("nan")
        wall = "(stopped)" if r["rc"] == "submitted" else f"{r['wall_s']:.1f} s"
        lines.append(
            f"{r['mode']:<14} {r['jobs']:>5} {r['sbatch']:>6} {r['submit_per_s']:>16.1f} "
            f"{r['queries']:>12} {per_job:>17.1f} {wall:>22} {r['process_s']:>6.1f} s"
        )
    tools = sorted({t for r in results for t in r["job_tools"]})
    lines.append(f"tools called from inside jobs: {', '.join(tools) or 'none'}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--timeout", type=int, default=900, help="per mode, seconds")
    parser.add_argument("--stuck-timeout", type=int, default=120, help="arrays-profile, seconds")
    parser.add_argument("--modes", default="local,single,arrays,arrays-profile")
    parser.add_argument(
        "--submit-only",
        action="store_true",
        help="stop each SLURM mode once SLURM holds every job: submission figures only",
    )
    parser.add_argument("--smoke", action="store_true", help="2 jobs as one array")
    args = parser.parse_args()
    if args.smoke:
        args.jobs, args.seconds, args.modes, args.timeout = 2, 0.1, "arrays", 120
    root = Path(tempfile.mkdtemp(prefix="slurm-scale-"))
    results = []
    for mode in args.modes.split(","):
        timeout = args.stuck_timeout if mode == "arrays-profile" else args.timeout
        result = run_mode(mode, args.jobs, args.seconds, root, timeout, args.submit_only)
        results.append(result)
        print(f"{mode}: rc {result['rc']}, {result['jobs']}/{args.jobs} jobs", file=sys.stderr)
        if result["rc"] not in (0, "submitted"):
            print(result["stderr_tail"], file=sys.stderr)
    print(f"{args.jobs} jobs of {args.seconds:g} s each, {os.cpu_count()} CPUs")
    print(table(results))
    shutil.rmtree(root, ignore_errors=True)
    checked = [r for r in results if r["mode"] != "arrays-profile"]
    ok = (0, "submitted")
    if any(r["rc"] not in ok or r["jobs"] != args.jobs for r in checked):
        sys.exit(1)


if __name__ == "__main__":
    main()
