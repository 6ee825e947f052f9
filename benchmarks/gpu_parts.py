"""One part of the GPU suite inside its own process (`gpu.py --child PART`): the rows it
measures and what else it finds, as one dict gpu.py merges. The parts and their order:
gpu_plan.py. A helper of gpu.py, no benchmark."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import torch
import transformers
from gpu_plan import EVAL_BATCHES, STEPS
from gpu_policy import case, policy_for
from gpu_runs import Session, eval_run, train_run

# the engine settings of the compiled rows (the config's `engine:` mapping)
GRAPHS = {"compile": True, "compile_mode": "reduce-overhead"}
COMPILED = {"compile": True}


def meta(device) -> dict:
    cuda = device.type == "cuda"
    return {
        "device": torch.cuda.get_device_name(device) if cuda else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "transformers": transformers.__version__,
        "pid": os.getpid(),
    }


def steps(smoke: bool) -> int:
    return 3 if smoke else STEPS


def run(part: str, device, smoke: bool, worker: dict | None = None) -> dict:
    """What part `part` measured: {"rows": [...], and "profile", "syncs", "cell" where it has
    them}; `worker`: a concurrent process's {processes, index, barrier}."""
    count, out = steps(smoke), {"rows": []}
    if part == "default":
        session = Session(case("default", role="A1"), device, smoke, count)
        out["rows"].append(train_run(session))
        out["rows"].append(eval_run(session, 2 if smoke else EVAL_BATCHES))
    elif part == "worker":
        k, i = worker["processes"], worker["index"]
        role = "A2" if k == 1 else None  # the single process is A/B/A's second A
        row = case("concurrent", role=role, processes=k, index=i)
        session = Session(row, device, smoke, count)
        out["rows"].append(train_run(session, barrier=lambda: wait(worker["barrier"], k, i)))
    elif part in ("trainer", "trainer_compiled"):
        from gpu_trainer import trainer_run

        compiled = part == "trainer_compiled"
        policy = policy_for(case(part, settings=COMPILED if compiled else {}), smoke=smoke)
        row = case(part, role=None if compiled else "B", attention=policy.attention_backend,
                   pad_multiple=policy.pad_multiple, compile=compiled)  # fmt: skip
        out["rows"].append(trainer_run(row, device, count, smoke))
    elif part == "encoders":
        for row in (case(part, task="bc5chem"), case(part, model="modernbert-base")):
            out["rows"].append(train_run(Session(row, device, smoke, count)))
    elif part in ("graphs", "compiled"):
        row = case(part, settings=GRAPHS if part == "graphs" else COMPILED)
        out["rows"].append(train_run(Session(row, device, smoke, count)))
    elif part == "checks":
        from gpu_cell import demo_cell
        from gpu_profile import profile_steps, sync_check

        out["profile"] = profile_steps(case(part), device, smoke)
        out["syncs"] = sync_check(case(part), device, smoke)
        with tempfile.TemporaryDirectory() as work:
            out["cell"] = demo_cell(Path(work), smoke=smoke)
    else:
        raise ValueError(f"no part {part!r} runs in a child process")
    return out


def wait(folder: str, processes: int, index: int, timeout: float = 300.0) -> None:
    """A barrier of `processes` processes sharing `folder`: each says it is ready, then waits
    for all (their timed passes start within a few milliseconds of each other)."""
    here = Path(folder)
    (here / f"ready-{index}").touch()
    deadline = time.monotonic() + timeout
    while len(list(here.glob("ready-*"))) < processes:
        if time.monotonic() > deadline:
            raise TimeoutError(f"concurrent: {processes} processes never all ready in {folder}")
        time.sleep(0.005)
