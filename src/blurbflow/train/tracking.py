"""Experiment tracking (docs/tracking.md): each cell reported as one tracked run to MLflow,
TensorBoard and/or Weights & Biases (offline), beside result.json, never instead of it.

Tracking is not an option of the cell: the job reads the config's `tracking` key itself
(`job_tracking`), so turning it on, off or elsewhere retrains nothing. The backends live in
blurbflow.train.trackers, imported only when one is configured: a cell without tracking imports
none of mlflow, tensorboard or wandb. Every call into a backend is guarded: one that raises is
reported once in the job's log and dropped for the rest of the cell, which goes on untracked by
it. A cell that resumes from its checkpoint continues the same tracked runs (their ids are kept
in the cell folder's `tracking.json`); one that starts afresh starts new ones. The loop reaches
the tracker as a hook (`CellTracker`, train/hooks.py).
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from blurbflow.config.study_plan import runs_on
from blurbflow.options import CellOptions
from blurbflow.tasks.crossval import PARENT
from blurbflow.train import Preempted
from blurbflow.train.hooks import Hook
from blurbflow.util.io import write_json_atomic

RUN_IDS = "tracking.json"
BACKENDS = ("mlflow", "tensorboard", "wandb")


@dataclass(frozen=True)
class Tracking:
    """What the config's `tracking` key turns on for one job."""

    settings: dict  # backend -> its settings ({} where the config says `true`)
    studies: tuple[str, ...] = ()  # the studies that run the job's cells (a tag)
    root: Path = Path(".")  # relative paths and file stores are taken from here


def settings_of(config: dict | None) -> dict:
    """The backends `tracking` turns on, each with its settings (`true` → {})."""
    given = (config or {}).get("tracking") or {}
    return {
        name: ({} if value is True else dict(value))
        for name, value in given.items()
        if value is not False and value is not None
    }


def studies_of(config: dict, options: CellOptions) -> tuple[str, ...]:
    """The studies whose models × tasks × recipes hold the job (a fold: its task's study)."""
    task = PARENT.get(options.task, (options.task,))[0]
    return tuple(
        name
        for name, study in (config.get("studies") or {}).items()
        if options.model in study.get("models", [])
        and task in study.get("tasks", [])
        and options.recipe in study.get("recipes", [])
        and runs_on(study, options.recipe, options.model, task)
    )


def job_tracking(config: dict | None, options: CellOptions, root: Path | None = None):
    """The job's Tracking, or None when the config tracks nothing."""
    settings = settings_of(config)
    if not settings:
        return None
    if "wandb" in settings:
        # a W&B service inherited from the process that started snakemake (a notebook, a test
        # session) writes this job's files where that process runs and ends with it: the job
        # starts its own
        os.environ.pop("WANDB_SERVICE", None)
    return Tracking(settings, studies_of(config, options), Path(root or Path.cwd()))


def cell_tags(options: CellOptions, studies: tuple[str, ...]) -> dict[str, str]:
    return {
        "cell": options.cell_id,
        "model": options.model,
        "task": options.task,
        "recipe": options.recipe,
        "hparams": options.hparams,
        "seed": str(options.seed),
        "studies": ",".join(studies),
    }


def cell_params(options: CellOptions) -> dict[str, str]:
    """The cell's options as flat string parameters (init_from's keys as `init_from.task`)."""
    flat: dict[str, str] = {}
    for key, value in options.to_dict().items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": json.dumps(v) for k, v in value.items()})
        else:
            flat[key] = value if isinstance(value, str) else json.dumps(value)
    return flat


def evaluation_metrics(record: dict, lr: float) -> dict[str, float]:
    """One evaluation's record (train_log.jsonl) as metrics: dev, test, their other scores,
    the training loss since the last evaluation, the learning rate and the epoch."""
    values = {"dev": record["dev"], "test": record["test"], "train_loss": record["train_loss"]}
    for split in ("dev", "test"):
        values.update({f"{split}_{k}": v for k, v in record.get(f"{split}_scores", {}).items()})
    values.update(lr=lr, epoch=record["epoch"])
    return {k: float(v) for k, v in values.items() if isinstance(v, int | float)}


def final_metrics(result: dict) -> dict[str, float]:
    """result.json's selected scores, the chance baselines and the wall time."""
    keys = ("dev", "test", "chance_dev", "chance_test", "selected_epoch", "wall_seconds")
    values = {f"final_{k}" if k in ("dev", "test") else k: result.get(k) for k in keys}
    return {
        k: float(v) for k, v in values.items() if isinstance(v, int | float) and math.isfinite(v)
    }


class CellTracker(Hook):
    """The cell's one handle on its tracked runs (without backends every call is free)."""

    def __init__(self, backends: dict | None = None):
        self.backends = dict(backends or {})
        self.step = 0

    def __bool__(self) -> bool:
        return bool(self.backends)

    def _each(self, what: str, call: Callable) -> None:
        for name, backend in list(self.backends.items()):
            try:
                call(backend)
            except Exception as error:  # tracking never fails or loses a cell
                warn(name, what, error)
                self.backends.pop(name, None)

    def on_evaluate(self, run, state, record: dict, improved: bool) -> None:
        if self:  # at the optimizer step the scheduler has counted
            self.evaluation(record, record.get("step", run.opt.scheduler.last_epoch), run.lr)

    def on_end(self, result: dict) -> None:
        self.finish(result)

    def on_error(self, error: BaseException) -> None:
        """Preempted: KILLED (its retry continues the runs); any other error: FAILED."""
        self.stop("KILLED" if isinstance(error, Preempted) else "FAILED")

    def evaluation(self, record: dict, step: int, lr: float) -> None:
        self.step = step
        values = evaluation_metrics(record, lr)
        self._each("logging an evaluation", lambda b: b.metrics(values, step))

    def finish(self, result: dict) -> None:
        """The result's final scores and status, then each run ends as finished."""
        values, status = final_metrics(result), str(result.get("status"))
        self._each("logging the result", lambda b: b.result(values, status, self.step))
        self.stop("FINISHED")

    def stop(self, status: str) -> None:
        """End every run: FINISHED, FAILED or KILLED (preempted: the retry continues it)."""
        self._each("ending the run", lambda b: b.end(status))
        self.backends = {}


def warn(name: str, what: str, error: BaseException) -> None:
    print(
        f"tracking: {name} failed {what} ({type(error).__name__}: {error}); "
        f"the cell goes on without {name}",
        file=sys.stderr,
        flush=True,
    )


def open_cell(
    tracking: Tracking | None, options: CellOptions, cell_dir: Path, resumed: bool, step: int
) -> CellTracker:
    """The cell's tracker: its runs continued (`resumed` from a checkpoint, ids from
    tracking.json) or started afresh; the ids are written back to tracking.json."""
    if tracking is None or not tracking.settings:
        return CellTracker()
    ids = read_run_ids(cell_dir) if resumed else {}
    from blurbflow.train import trackers  # the backend libraries: only now

    backends = {}
    for name, settings in tracking.settings.items():
        start = trackers.Start(
            options.cell_id,
            Path(cell_dir),
            tracking.root,
            cell_tags(options, tracking.studies),
            cell_params(options),
            ids.get(name),
            step if resumed else 0,
        )
        try:
            backends[name] = trackers.BACKENDS[name](settings, start)
        except Exception as error:
            warn(name, "starting the run", error)
    try:
        ids = {name: b.run_id for name, b in backends.items() if getattr(b, "run_id", None)}
        write_json_atomic(Path(cell_dir) / RUN_IDS, ids)
    except OSError as error:
        warn("tracking.json", "recording the run ids", error)
    return CellTracker(backends)


def read_run_ids(cell_dir: Path) -> dict[str, str]:
    try:
        ids = json.loads((Path(cell_dir) / RUN_IDS).read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in ids.items() if isinstance(v, str)} if isinstance(ids, dict) else {}
