"""The tracking backends (blurbflow.train.tracking; docs/tracking.md): MLflow through its client
(a tracking server's URI, a database URI or a file store), TensorBoard event files written with
torch's SummaryWriter, Weights & Biases in offline mode (synced later with `wandb sync`). Each
library is imported when its backend opens, so only the configured ones are. A backend opens a
cell's run (or continues `start.run_id`), takes metrics at an optimizer step, the result's final
scores and status, and ends its run FINISHED, FAILED or KILLED."""

from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MLFLOW_STORE = "results/mlruns"
DEFAULT_EXPERIMENT = "blurbflow"
DEFAULT_PROJECT = "blurbflow"
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")  # `http:`, `sqlite:`, `file:`, `databricks:`…


@dataclass(frozen=True)
class Start:
    """What a backend needs to open (or reopen) a cell's tracked run."""

    name: str  # the cell id: model/task/recipe/hparams/seedN
    cell_dir: Path
    root: Path
    tags: dict[str, str]
    params: dict[str, str]
    run_id: str | None  # the run to continue (a resumed cell), else None
    step: int  # optimizer steps already done (a resumed cell; 0 afresh)


def tracking_uri(given: str | None, root: Path) -> str:
    """A URI as given; a plain path (the default: results/mlruns) as a file store under
    `root`. MLflow 3 keeps its file store in maintenance mode and refuses it unless
    MLFLOW_ALLOW_FILE_STORE is set: a folder named in the config is that consent. Unlike one
    SQLite file, it takes concurrent jobs (a run's folder each)."""
    given = given or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_MLFLOW_STORE
    if URI.match(given) and not given.startswith("file:"):
        return given
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    if given.startswith("file:"):
        return given
    return (Path(root) / given).resolve().as_uri()


class MLflow:
    """One MLflow run per cell: tags, the options as parameters, a metric per evaluation."""

    BATCH = 100  # MLflow's limit of parameters per log_batch call

    def __init__(self, settings: dict, start: Start):
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(
            tracking_uri=tracking_uri(settings.get("tracking_uri"), start.root)
        )
        self.run_id = self._continued(start.run_id)
        if self.run_id is None:
            experiment = self._experiment(settings.get("experiment") or DEFAULT_EXPERIMENT)
            run = self.client.create_run(experiment, run_name=start.name, tags=start.tags)
            self.run_id = run.info.run_id
            self._params(start.params)

    def _continued(self, run_id: str | None) -> str | None:
        if not run_id:
            return None
        try:
            self.client.get_run(run_id)
        except Exception:  # the store lost it, or another store: a new run
            return None
        self.client.update_run(run_id, status="RUNNING")
        return run_id

    def _experiment(self, name: str) -> str:
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        try:
            return self.client.create_experiment(name)
        except Exception:  # another job created it meanwhile
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise
            return found.experiment_id

    def _params(self, params: dict[str, str]) -> None:
        from mlflow.entities import Param

        items = [Param(k, v) for k, v in sorted(params.items())]
        for i in range(0, len(items), self.BATCH):
            self.client.log_batch(self.run_id, params=items[i : i + self.BATCH])

    def metrics(self, values: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(k, v, now, step) for k, v in values.items()]
        self.client.log_batch(self.run_id, metrics=items)

    def result(self, values: dict[str, float], status: str, step: int) -> None:
        from mlflow.entities import RunTag

        self.metrics(values, step)
        self.client.log_batch(self.run_id, tags=[RunTag("status", status)])

    def end(self, status: str) -> None:
        self.client.set_terminated(self.run_id, status=status)


class TensorBoard:
    """Event files in the cell folder's `tensorboard/` (or `{dir}/{cell id}` when `dir` is
    set): a scalar per metric at its optimizer step; the cell's tags and options as text."""

    run_id = None  # a resumed cell appends to the same folder

    def __init__(self, settings: dict, start: Start):
        from torch.utils.tensorboard import SummaryWriter

        folder = Path(start.cell_dir, "tensorboard")
        if settings.get("dir"):
            folder = Path(start.root, settings["dir"], start.name)
        if not start.step:
            shutil.rmtree(folder, ignore_errors=True)  # an earlier run of this cell's
        # a resumed cell: events past its checkpoint's step (a run killed after it) are dropped
        self.writer = SummaryWriter(str(folder), purge_step=start.step + 1 if start.step else None)
        if not start.step:
            self.writer.add_text("cell", _table(start.tags), 0)
            self.writer.add_text("options", _table(start.params), 0)
            self.writer.flush()

    def metrics(self, values: dict[str, float], step: int) -> None:
        for key, value in values.items():
            self.writer.add_scalar(key, value, step)
        self.writer.flush()

    def result(self, values: dict[str, float], status: str, step: int) -> None:
        for key, value in values.items():
            self.writer.add_scalar(f"final/{key}", value, step)
        self.writer.add_text("status", status, step)
        self.writer.flush()

    def end(self, status: str) -> None:
        self.writer.close()


def _table(values: dict[str, str]) -> str:
    return "\n".join(f"    {k}: {v}" for k, v in values.items())  # markdown: a code block


class WandB:
    """A W&B run in offline mode (never the network): files under the cell folder's `wandb/`
    (or `{dir}/wandb/`), named by the cell id, for `wandb sync` on a machine that may upload."""

    def __init__(self, settings: dict, start: Start):
        os.environ["WANDB_MODE"] = "offline"
        os.environ.setdefault("WANDB_SILENT", "true")
        os.environ.setdefault("WANDB_ERROR_REPORTING", "false")  # no crash reports sent either
        import wandb

        folder = Path(start.root, settings["dir"]) if settings.get("dir") else start.cell_dir
        folder = folder.resolve()  # absolute: W&B's service may run in another folder
        folder.mkdir(parents=True, exist_ok=True)
        tags = [f"{k}:{v}"[:64] for k, v in start.tags.items() if k not in ("cell", "studies")]
        studies = start.tags.get("studies")
        tags += [f"study:{s}"[:64] for s in studies.split(",")] if studies else []
        self.run = wandb.init(
            project=settings.get("project") or DEFAULT_PROJECT,
            entity=settings.get("entity"),
            dir=str(folder),
            mode="offline",
            id=start.run_id or None,
            resume="allow" if start.run_id else None,
            name=start.name,
            group=start.name.rsplit("/", 1)[0],  # the job: the cell's seeds together
            tags=tags,
            config={**start.params, "cell": start.name},
            reinit="finish_previous",
            # no console capture (the job's log has it), no system metrics sampling
            settings=wandb.Settings(
                console="off",
                save_code=False,
                disable_git=True,
                x_disable_stats=True,
            ),
        )
        self.run_id = self.run.id

    def metrics(self, values: dict[str, float], step: int) -> None:
        self.run.log({**values, "optimizer_step": step})

    def result(self, values: dict[str, float], status: str, step: int) -> None:
        self.run.summary.update({**values, "status": status})

    def end(self, status: str) -> None:
        self.run.finish(exit_code=0 if status == "FINISHED" else 1)


BACKENDS = {"mlflow": MLflow, "tensorboard": TensorBoard, "wandb": WandB}
