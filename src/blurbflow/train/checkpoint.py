"""Resumable cells: a checkpoint after every evaluation and on SIGTERM (mid-epoch), so a
preempted or timed-out SLURM job resumes on retry and ends with the metrics of an uninterrupted
run.

The checkpoint holds everything the loop's future depends on: weights, optimizer and schedule
state, the torch RNG (dropout), the batch shuffler, fp16's gradient scaler and, mid-epoch, the
epoch's batch order and position. It is loaded with `weights_only=True` and only when its key —
the cell's options and identity (model content, tokenized inputs, data) — is identical;
otherwise it is discarded and the log says which part differed.
"""

from __future__ import annotations

import json
import signal
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from blurbflow.train import Preempted  # noqa: F401  (raised by the cell loop)
from blurbflow.util.io import atomic_path

CHECKPOINT = "checkpoint.pt"


@dataclass
class LoopState:
    epoch: int = 1  # the epoch being (or next to be) trained, 1-based
    step: int = 0  # batches already done in that epoch
    batches: list[list[int]] | None = None  # that epoch's batch order, once drawn
    losses: list[float] = field(default_factory=list)  # that epoch's losses so far
    records: list[dict] = field(default_factory=list)  # finished evaluations' metrics
    best_predictions: dict | None = None
    last_predictions: dict | None = None
    scaler: dict | None = None  # fp16's loss scale and its growth count (train/fit.py)


class SigtermFlag:
    """Records SIGTERM instead of dying, so the loop can save at the next step boundary."""

    def __init__(self):
        self.raised = False
        self._previous = None

    def __enter__(self):
        self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def _handle(self, signum, frame):
        self.raised = True

    def __exit__(self, *exc):
        signal.signal(signal.SIGTERM, self._previous)


def save(cell_dir: Path, key: str, state: LoopState, model, optimizer, scheduler, shuffler) -> None:
    payload = {
        "options": key,
        "loop": asdict(state),
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "shuffler": shuffler.getstate(),
    }
    with atomic_path(Path(cell_dir) / CHECKPOINT) as tmp:
        torch.save(payload, tmp)


def load(cell_dir: Path, key: str, model, optimizer, scheduler, shuffler) -> LoopState | None:
    """Restore a checkpoint written for exactly these options; None when there is none."""
    path = Path(cell_dir) / CHECKPOINT
    if not path.exists():
        return None
    try:
        payload = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as error:  # unreadable, torn, or not our plain tensors and lists
        raise ValueError(
            f"{path}: cannot be read as a checkpoint with weights_only ({type(error).__name__}); "
            "delete it to train this cell afresh"
        ) from None
    if payload["options"] != key:
        path.unlink()  # written for other options or another model/data: start afresh
        print(f"{path}: discarded, {key_difference(payload['options'], key)}", flush=True)
        return None
    model.load_state_dict(payload["model"])
    optimizer.load_state_dict(payload["optimizer"])
    scheduler.load_state_dict(payload["scheduler"])
    torch.set_rng_state(payload["torch_rng"])
    if payload["cuda_rng"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(payload["cuda_rng"])
    version, internal, gauss = payload["shuffler"]
    shuffler.setstate((version, tuple(internal), gauss))
    return LoopState(**payload["loop"])


def key_difference(old: str, new: str) -> str:
    """Which part of two checkpoint keys differs (options or a part of the identity)."""
    try:
        old_key, new_key = json.loads(old), json.loads(new)
    except (TypeError, ValueError):
        return "written by an older version"
    if not isinstance(old_key, dict) or "identity" not in old_key:
        return "written without an identity (an older version)"
    if old_key.get("options") != new_key.get("options"):
        return "written for other options"
    parts = [
        p
        for p in ("model", "tokenized", "data")
        if old_key["identity"].get(p) != new_key["identity"].get(p)
    ]
    return f"written for other {' and '.join(parts) or 'identity'} content"


def remove(cell_dir: Path) -> None:
    (Path(cell_dir) / CHECKPOINT).unlink(missing_ok=True)
