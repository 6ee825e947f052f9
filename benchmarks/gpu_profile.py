"""Where a default training step's time goes (benchmarks/gpu.py's `checks` part): the step under
torch.profiler, summing device events only (kernels, copies, fills: each appears once there,
while an operator's device time counts its kernels again), and the host syncs the steps make
between the planned ones (every CHECK_STEPS steps, when the losses reach the host).
A helper of gpu.py, no benchmark."""

from __future__ import annotations

import contextlib
import warnings

import torch
from gpu_runs import Session, sync, timed_pass

from blurbflow.train import engine
from blurbflow.train.step import CHECK_STEPS

SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")


def busy_us(intervals: list[tuple[float, float]]) -> float:
    """Microseconds covered by the union of (start, end) intervals (kernels of two streams may
    overlap: counted once)."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def profile_steps(row: dict, device, smoke: bool, count: int = 4) -> dict:
    """`count` default steps after a pass over the same batches: their wall time unprofiled,
    then under torch.profiler the device's busy time (the union of its events), the kernels
    and the host's sync calls (cudaStreamSynchronize and the like), per step."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    session = Session(row, device, smoke, count)
    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with engine.attention_backends(device, session.policy.attention_backend):
        session.run()  # the first use of every width
        wall = timed_pass(device, session.run)
        with profile(activities=activities) as prof:
            session.run()
            sync(device)  # one cudaDeviceSynchronize of ours, left out below
    events = prof.events()
    on_device = [e for e in events if e.device_type == DeviceType.CUDA]
    kernels = [e for e in on_device if not e.name.startswith(("Memcpy", "Memset"))]
    syncs = sum(e.name in SYNC_CALLS for e in events) - (1 if cuda else 0)
    busy = busy_us([(e.time_range.start, e.time_range.end) for e in on_device]) / 1e3
    heavy = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:6]
    step_ms = 1000 * wall / count
    return {
        **row,
        **session.fields(),
        "steps": count,
        "step_ms": round(step_ms, 2),
        "device_busy_ms": round(busy / count, 2) if cuda else None,
        "busy_fraction": round(busy / count / step_ms, 3) if cuda else None,
        "kernels_per_step": round(len(kernels) / count, 1) if cuda else None,
        "host_syncs_per_step": round(syncs / count, 2) if cuda else None,
        "top_host_ops_ms": {e.key: round(e.self_cpu_time_total / 1e3, 2) for e in heavy},
    }


class _LocalScalars(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts the operators that read a tensor's value on the host (`.item()`, `bool(t)`): on
    the CPU, where torch's sync debug mode has nothing to watch."""

    READS = ("aten::_local_scalar_dense", "aten::is_nonzero")

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += func.name() in self.READS
        return func(*args, **(kwargs or {}))


def sync_check(row: dict, device, smoke: bool) -> dict:
    """Host syncs in each of CHECK_STEPS + 10 default steps after a warm pass, under
    torch.cuda.set_sync_debug_mode("warn") (the CPU: reads of a value on the host, counted by
    a dispatch mode); the planned loss syncs (every CHECK_STEPS steps) named apart."""
    count = CHECK_STEPS + 10
    session = Session(row, device, smoke, count)
    per_step = [0] * count
    cuda = device.type == "cuda"

    @contextlib.contextmanager
    def counted(i: int):
        if cuda:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                yield
            per_step[i] = sum("synchroniz" in str(w.message) for w in caught)
        else:
            with _LocalScalars() as reads:
                yield
            per_step[i] = reads.count

    with engine.attention_backends(device, session.policy.attention_backend):
        session.run(session.batches[:10])  # every width seen once
        session.steps.sync(session.state, force=True)  # a planned sync: the count starts at 0
        sync(device)
        session.synced_at.clear()
        if cuda:
            torch.cuda.set_sync_debug_mode("warn")
        try:
            session.run(each=counted)
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode(0)
    planned = session.synced_at
    unplanned = sum(n for i, n in enumerate(per_step) if i not in planned)
    return {
        **session.fields(),
        "steps": count,
        "counted": "torch.cuda.set_sync_debug_mode" if cuda else "host reads (dispatch mode)",
        "planned_sync_steps": [i + 1 for i in planned],
        "syncs_at_planned": sum(per_step[i] for i in planned),
        "unplanned_syncs": unplanned,
        "steps_with_syncs": {i + 1: n for i, n in enumerate(per_step) if n and i not in planned},
        "ok": unplanned == 0 if cuda else None,
    }
