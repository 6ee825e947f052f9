"""Several seeds of a job at once on its one GPU, each in a process of its own (engine
`cells_per_gpu`; how many: `cells_for_job`, blurbflow.gpu_share's rule). A seed's process is
`python -m blurbflow.train.seed_process`, a fresh interpreter (no fork of a process that may
hold CUDA), given its seed and what the job process set (engine settings, attention, the
config's own tasks) on stdin; it trains exactly as the job process would (blurbflow.train.
seed_run), so its result is the bits of its solo run. The job process keeps the folder's lock,
launches a seed as another ends, and records each seed's sharing in its result.json.

A seed's crash is recorded while the others run: its process records an exception itself; one
that dies (a signal, the kernel's OOM killer) is recorded here. A seed out of GPU memory beside
others trains again alone after them. SIGTERM (preemption) reaches every seed's process (the
job's is passed on too): each saves its checkpoint, none starts, and the job raises Preempted.
A seed's process ends with the job's should the job's die first (Linux: PR_SET_PDEATHSIG)."""

from __future__ import annotations

import dataclasses
import os
import pickle
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import torch

import blurbflow
from blurbflow import gpu_share
from blurbflow.models import attention
from blurbflow.models.prefetch import model_folder
from blurbflow.options import CellOptions
from blurbflow.tasks.registry import BUILTIN, TASKS
from blurbflow.train import Preempted, engine
from blurbflow.train.seed_run import (
    SEED_LOG,
    read_result,
    record_failure,
    record_sharing,
    set_aside_if_verified,
)

PREEMPTED_EXIT = 143  # a seed's process saved its checkpoint on SIGTERM
RECORDED_EXIT = 3  # a seed's process recorded its own failure (result.json, traceback.txt)
POLL_SECONDS = 0.2
STOP_SECONDS = 120  # a seed's process's time to checkpoint when the job itself fails


@dataclass(frozen=True)
class SeedWork:
    """A seed to train: its options, why it trains, where its result goes."""

    cell: CellOptions
    why: str
    result_path: Path


@dataclass(frozen=True)
class ProcessState:
    """What the job process set that a seed's process must set again."""

    engine: dict  # the job's engine settings (blurbflow.train.engine.use)
    attention: str | None  # the model entry's attn_implementation (blurbflow.models.attention)
    tasks: dict  # the config's own tasks (blurbflow.tasks.register_tasks)

    @classmethod
    def now(cls) -> ProcessState:
        own = {name: spec for name, spec in TASKS.items() if name not in BUILTIN}
        return cls(dataclasses.asdict(engine.current()), attention.requested(), own)

    def restore(self) -> None:
        engine.use(self.engine)
        attention.use(self.attention)
        TASKS.update(self.tasks)


def host_memory() -> float | None:
    """Bytes of host memory the job may use: its SLURM allocation, else the machine's."""
    per_node, per_cpu = os.environ.get("SLURM_MEM_PER_NODE"), os.environ.get("SLURM_MEM_PER_CPU")
    cpus = os.environ.get("SLURM_CPUS_PER_TASK") or os.environ.get("SLURM_CPUS_ON_NODE")
    try:
        if per_node:
            return float(per_node) * 2**20
        if per_cpu and cpus:
            return float(per_cpu) * float(cpus) * 2**20
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError):
        return None


def host_cpus() -> int:
    """CPUs this process may run on (SLURM's allocation sets its affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cells_for_job(options: CellOptions, seeds: int, device: torch.device) -> int:
    """K for `seeds` to train: engine.cells_per_gpu when a number; `auto`: 1 on the CPU, on
    CUDA as many cells as the GPU's memory holds by blurbflow.gpu_share's rule (the model's
    config.json; unreadable: 1), no more processes than the job's host memory and CPUs hold."""
    setting = engine.current().cells_per_gpu
    if setting != "auto" or device.type != "cuda":
        return gpu_share.cells_at_once(setting, seeds, None, None)
    try:
        shape = gpu_share.shape_of(gpu_share.read_config(model_folder(options.model_options)))
    except Exception:  # an unreadable model folder: its own job says why
        shape = None
    if shape is None:
        return 1
    total = torch.cuda.get_device_properties(device).total_memory
    per_cell = gpu_share.cell_gpu_bytes(shape, options.to_dict())
    cells = gpu_share.cells_at_once("auto", seeds, total, per_cell)
    if (host := host_memory()) is not None:
        cells = min(cells, gpu_share.fitting(host, gpu_share.host_bytes_per_cell(shape.params)))
    return max(1, min(cells, host_cpus() // gpu_share.CPUS_PER_CELL))


@dataclass
class _Running:
    work: SeedWork
    process: subprocess.Popen
    alone: bool  # trains with no other seed beside it
    signalled: bool = False


class _Sigterm:
    """While seeds run: SIGTERM to the job is passed on to each seed's process."""

    def __init__(self, running: list[_Running]):
        self.running, self.raised, self._installed = running, False, False
        self._previous = signal.SIG_DFL

    def __enter__(self):
        try:
            self._previous = signal.signal(signal.SIGTERM, self._handle) or signal.SIG_DFL
            self._installed = True
        except ValueError:  # not the main thread: seeds' processes get it from the scheduler
            pass
        return self

    def _handle(self, signum, frame):
        self.raised = True
        self.forward()

    def forward(self) -> None:
        for run in self.running:
            if not run.signalled and run.process.poll() is None:
                run.signalled = True
                run.process.send_signal(signal.SIGTERM)

    def __exit__(self, *exc):
        if self._installed:
            signal.signal(signal.SIGTERM, self._previous)


def _launch(work: SeedWork, payload: dict, alone: bool) -> _Running:
    package_root = str(Path(blurbflow.__file__).resolve().parents[1])
    env = dict(os.environ)  # the same blurbflow as this process, whatever its sys.path
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    process = subprocess.Popen(
        [sys.executable, "-m", "blurbflow.train.seed_process"], stdin=subprocess.PIPE, env=env
    )
    try:
        with process.stdin:
            pickle.dump({**payload, "work": work, "parent": os.getpid()}, process.stdin)
    except BrokenPipeError:  # it died at once: its exit status says how
        pass
    return _Running(work, process, alone)


def sharing(seed: int, spans: dict[int, list[float]], now: float) -> float:
    """How many seeds trained on average while `seed` did (itself included), from each
    seed's [start, end] (end: `now` while it runs)."""
    start, end = spans[seed][0], spans[seed][1] or now
    span = max(end - start, 1e-9)
    overlap = sum(max(0.0, min(end, e or now) - max(start, s)) for s, e in spans.values())
    return max(1.0, overlap / span)


def out_of_memory(error: str | None) -> bool:
    return bool(error) and ("OutOfMemoryError" in error or "out of memory" in error)


def train_at_once(
    todo: list[SeedWork],
    cells: int,
    common: dict,
) -> tuple[dict[int, str], list[str]]:
    """Train `todo`, `cells` at a time, each seed in its own process; (seed -> status, the
    failed seeds' lines). `common`: train_seed's other arguments (encoded_dir, data_dir,
    threads, identity, tracked), the job's threads split between the processes."""
    threads = max(1, int(common.get("threads") or 1) // cells)
    payload = {**common, "threads": threads, "state": ProcessState.now()}
    pending = deque((work, False) for work in todo)
    running: list[_Running] = []
    spans: dict[int, list[float]] = {}
    statuses: dict[int, str] = {}
    errors: list[str] = []
    preempted = False
    print(f"training {len(todo)} seeds {cells} at a time, each in its own process", flush=True)
    with _Sigterm(running) as sigterm:
        try:
            while running or (pending and not (preempted or sigterm.raised)):
                while pending and not (preempted or sigterm.raised):
                    alone = pending[0][1]
                    if running and (alone or len(running) >= cells or running[0].alone):
                        break
                    work, alone = pending.popleft()
                    running.append(_launch(work, payload, alone))
                    spans[work.cell.seed] = [time.monotonic(), None]
                if preempted or sigterm.raised:
                    sigterm.forward()  # to a seed launched as SIGTERM came too
                time.sleep(POLL_SECONDS)
                for run in [r for r in running if r.process.poll() is not None]:
                    running.remove(run)
                    now = time.monotonic()
                    spans[run.work.cell.seed][1] = now
                    shared = sharing(run.work.cell.seed, spans, now)
                    outcome = _ended(run, cells, shared, statuses, errors)
                    if outcome == "preempted":
                        preempted = True
                        sigterm.forward()  # the others save theirs and end too
                    elif outcome == "again alone":
                        pending.append((run.work, True))
        finally:
            _stop(running)  # only when this loop raised: each saves its checkpoint
    if preempted or sigterm.raised:
        raise Preempted(
            f"SIGTERM: the seeds that were training saved their checkpoints; "
            f"{len(statuses)} of {len(todo)} finished, the retry resumes the rest"
        )
    return statuses, errors


def _ended(run: _Running, cells: int, shared: float, statuses: dict, errors: list) -> str:
    """Record how a seed's process ended: `done`, `preempted` or `again alone`."""
    work, code = run.work, run.process.returncode
    seed = work.cell.seed
    if code in (PREEMPTED_EXIT, -signal.SIGTERM):  # its checkpoint saved, if it had begun
        return "preempted"
    result, _ = read_result(work.result_path)
    if code == 0 and result is not None:
        record_sharing(work.result_path, cells, shared)
        statuses[seed] = result["status"]
        return "done"
    if code == RECORDED_EXIT and result is not None:
        if out_of_memory(result.get("error")) and shared > 1 and not run.alone:
            print(f"seed {seed}: out of GPU memory beside other seeds: trains again alone")
            return "again alone"
        statuses[seed] = "failed"
        errors.append(f"seed {seed}: {result.get('error')}")
        return "done"
    how = f"by signal {-code}" if code < 0 else f"with exit status {code}"
    if code < 0 and -code in signal.valid_signals():
        how = f"by {signal.Signals(-code).name}"
    error = ChildProcessError(
        f"the seed's process ended {how} before recording a result (its output: "
        f"{work.result_path.parent / SEED_LOG} and the job log)"
    )
    set_aside_if_verified(work.result_path, work.cell)  # as its process would have, first
    errors.append(record_failure(work.cell, work.result_path, error))
    statuses[seed] = "failed"
    return "done"


def _stop(running: list[_Running]) -> None:
    """End the seeds' processes still running (the job itself raised): SIGTERM, so that each
    saves its checkpoint, then SIGKILL for one that does not end in STOP_SECONDS."""
    for run in running:
        if run.process.poll() is None:
            run.process.send_signal(signal.SIGTERM)
    for run in running:
        try:
            run.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            run.process.kill()
            run.process.wait()
