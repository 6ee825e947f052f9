"""The GPU suite's processes (benchmarks/gpu.py): each part runs in fresh child processes, its
output kept in a log beside the results, killed with the processes it started when its time is
up; the `concurrent` part starts 1, 2 and 4 of them at once and sums what they trained while
all ran. A helper of gpu.py, no benchmark."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path


class PartFailed(Exception):
    """A child process failed or ran out of time; the message holds its log's end."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


def tail(log: Path, lines: int = 25) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""


def start(command: list[str], log: Path, env: dict) -> subprocess.Popen:
    """`command` in a session of its own (its compile workers end with it), output to `log`."""
    with open(log, "w") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)  # fmt: skip


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def wait_all(processes: list[tuple[subprocess.Popen, Path]], timeout: float) -> None:
    """Wait for every process; when one fails or the time is up, stop them all and raise."""
    deadline = time.monotonic() + timeout
    try:
        while any(p.poll() is None for p, _ in processes):
            failed = [(p, log) for p, log in processes if p.poll() not in (None, 0)]
            if failed:
                p, log = failed[0]
                raise PartFailed(f"exit status {p.returncode}:\n{tail(log)}")
            if time.monotonic() > deadline:
                raise PartFailed(f"timed out after {timeout:.0f} s:\n{tail(processes[0][1])}",
                                 timed_out=True)  # fmt: skip
            time.sleep(0.05)
        for p, log in processes:
            if p.returncode != 0:
                raise PartFailed(f"exit status {p.returncode}:\n{tail(log)}")
    finally:
        for p, _ in processes:
            stop(p)


def child(base: list[str], part: str, work: Path, env: dict, timeout: float, *extra) -> dict:
    """Run part `part` in a fresh process (`base` + `--child PART --out FILE`); its JSON."""
    out, log = work / f"{part}.json", work / f"{part}.log"
    command = [*base, "--child", part, "--out", str(out), *map(str, extra)]
    wait_all([(start(command, log, env), log)], timeout)
    return json.loads(out.read_text())


def concurrent(base: list[str], work: Path, env: dict, timeout: float, ks) -> tuple[list, list]:
    """K (each of `ks`) processes each training the default row, their timed passes started
    together (a barrier): the rows, and per K the samples/s of all of them over the span from
    the first start to the last end (aggregate per GPU) and per process."""
    rows, groups, deadline = [], [], time.monotonic() + timeout
    for k in ks:
        barrier = work / f"barrier-{k}"
        barrier.mkdir(parents=True, exist_ok=True)
        started, outs = [], []
        for i in range(k):
            out, log = work / f"concurrent-{k}-{i}.json", work / f"concurrent-{k}-{i}.log"
            command = [*base, "--child", "worker", "--out", str(out), "--processes", str(k),
                       "--index", str(i), "--barrier", str(barrier)]  # fmt: skip
            started.append((start(command, log, env), log))
            outs.append(out)
        wait_all(started, max(1.0, deadline - time.monotonic()))
        shutil.rmtree(barrier)
        found = [json.loads(out.read_text()) for out in outs]
        mine = [row | {"pid": f["meta"]["pid"]} for f in found for row in f["rows"]]
        rows += mine
        groups.append(aggregate(k, mine))
    return rows, groups


def aggregate(k: int, rows: list[dict]) -> dict:
    """What K processes trained together: samples over the span of their timed passes."""
    first, last = min(r["wall"][0] for r in rows), max(r["wall"][1] for r in rows)
    overlap = min(r["wall"][1] for r in rows) - max(r["wall"][0] for r in rows)
    samples = sum(r["samples_per_s"] * r["step_ms"] * r["steps"] / 1000 for r in rows)
    rates = [r["samples_per_s"] for r in rows]
    return {
        "processes": k,
        "aggregate_samples_per_s": round(samples / (last - first), 1),
        "per_process_samples_per_s": rates,
        "mean_per_process": round(sum(rates) / k, 1),
        "overlap_fraction": round(max(overlap, 0.0) / (last - first), 3),
        "pids": sorted({r["pid"] for r in rows}),
    }
