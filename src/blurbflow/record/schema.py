"""The one schema of a cell's result.json: the cell writes it (`Result`), a job writes the failed
form, and aggregation reads it. Each field's `Annotated` marker says how it becomes a column of
results/cells.parquet, so the columns are declared here and nowhere else (docs/results.md
describes the layout).

Adding a field a table or statistic reads: declare it here with its column kind, fill it in
`train/cell.py`; aggregation then carries it as a column."""

from __future__ import annotations

import os
from typing import Annotated, Any, TypedDict, get_type_hints

from blurbflow.options import CellOptions

# How a field becomes a column: a float (NaN when absent), text, an integer or a JSON string.
NUMBER, TEXT, INTEGER, JSON = "number", "text", "integer", "json"
STATUSES = ("ok", "diverged", "failed", "missing")  # missing: no result.json at all
FINISHED = ("ok", "diverged")


class CellKey(TypedDict):
    """The cell a result belongs to (its folder: `{model}/{task}/{recipe}/{hparams}/seed{N}`)."""

    model: str
    task: str
    recipe: str
    hparams: str
    seed: int


class Result(TypedDict, total=False):
    """result.json, in column order. A failed cell (blurbflow.train.job) writes only `cell`,
    `options`, `status`, `error`, `traceback`, `finished` and the `where_run` fields (host,
    slurm_job_id, launch)."""

    cell: CellKey
    task_type: Annotated[str, TEXT]
    metric: Annotated[str, TEXT]
    status: Annotated[str, TEXT]  # one of STATUSES but `missing`
    error: Annotated[str | None, TEXT]  # divergence or the exception (failed)
    dev: Annotated[float | None, NUMBER]  # metrics at the selected epoch
    test: Annotated[float | None, NUMBER]
    selected_epoch: Annotated[int | None, INTEGER]
    # the optimizer step of the selected evaluation (recipes with eval_every_steps; else None)
    selected_step: Annotated[int | None, INTEGER]
    chance_dev: Annotated[float, NUMBER]  # the best constant predictor's score
    chance_test: Annotated[float, NUMBER]
    wall_seconds: Annotated[float, NUMBER]
    gpu_hours: Annotated[float, NUMBER]
    peak_memory_mb: Annotated[float | None, NUMBER]
    device: Annotated[str, TEXT]
    started: Annotated[str, TEXT]  # ISO 8601, UTC
    finished: Annotated[str, TEXT]
    git_commit: Annotated[str | None, TEXT]
    options: Annotated[dict[str, Any], JSON]  # the cell's options as the config gives them
    # one record per evaluation (per epoch, or every eval_every_steps steps with its `step`):
    # epoch, [step,] train_loss, dev, test, seconds
    epochs: Annotated[list[dict[str, Any]], JSON]
    versions: Annotated[dict[str, str], JSON]  # blurbflow.util.provenance.code_versions
    # what a sequence head read (blurbflow.models.pooling); null: token tasks, QA, older cells
    pooling: Annotated[str | None, TEXT]
    attn_implementation: Annotated[str | None, TEXT]  # what ran (blurbflow.models.attention)
    # the snakemake run's config files and `--config` (blurbflow.util.provenance.launch); null: by
    # hand, or older cells
    launch: Annotated[dict[str, Any] | None, JSON]
    # the engine policy that ran (blurbflow.train.engine): SDPA backends, how batches were shaped
    attention_backend: Annotated[str | None, TEXT]  # torch, no_cudnn, cudnn_ragged
    batch_shapes: Annotated[str | None, TEXT]  # micro_batches, packed, padded, padding_free
    # not columns: what verification and provenance read from the file itself
    identity: dict[str, Any]  # blurbflow.config.identity.cell_identity
    model_commit: str | None
    selection: str  # best_dev or last (last when training on train+dev)
    train_instances: int
    # tokens one epoch trains on and one evaluation reads (dev + test): the plan's unit of work
    tokens: dict[str, int]
    train_ids_sha: str
    precision: str | None
    # the policy's other settings (blurbflow.train.engine.Policy.record); compiled, also
    # `compile_cache`: folder, start (cold, warm, artifacts, partial), compile_seconds, artifacts;
    # and the job's seeds at once on its GPU: cells_per_gpu (K) and cells_sharing (seed_run)
    engine: dict[str, Any]
    host: str
    slurm_job_id: str | None
    predictions_sha256: str
    # intermediate fine-tuning (blurbflow.config.init_from): what a dependant loaded; a source's
    # weights
    init_loaded: dict[str, Any]  # loaded (count), fresh and unused tensor names
    weights_sha256: str  # seed{N}/weights.pt of a `keep_weights` cell
    model_sha256: str  # seed{N}/model/model.safetensors of a `keep_model` cell
    traceback: list[str]  # failed only


CELL_KEYS: tuple[str, ...] = tuple(CellKey.__annotations__)


def _columns(kind: str) -> list[str]:
    hints = get_type_hints(Result, include_extras=True)
    return [name for name, hint in hints.items() if kind in getattr(hint, "__metadata__", ())]


NUMERIC = _columns(NUMBER)
TEXT_COLUMNS = _columns(TEXT)
INTEGER_COLUMNS = _columns(INTEGER)
JSON_COLUMNS = _columns(JSON)  # nested fields, kept as JSON strings in the frame
# recipe options with a column of their own: from result.json's `options`, or for a cell without
# a readable result from the options the config gives it
OPTION_COLUMNS = ["head"]
COLUMNS = [
    *CELL_KEYS,
    *(
        name
        for name in get_type_hints(Result, include_extras=True)
        if name in {*NUMERIC, *TEXT_COLUMNS, *INTEGER_COLUMNS, *JSON_COLUMNS}
    ),
    *OPTION_COLUMNS,
    "path",  # where the result.json is (or would be)
]


def cell_key(options: CellOptions) -> CellKey:
    """The `cell` field of a result from the cell's options."""
    return CellKey(**{key: getattr(options, key) for key in CELL_KEYS})


def identity_from_path(path: str | os.PathLike) -> dict:
    """Parse `.../{model}/{task}/{recipe}/{hparams}/seed{seed}/result.json`."""
    parts = os.path.normpath(os.fspath(path)).split(os.sep)  # str ops: 20k paths, no Path()
    if len(parts) < 6 or not parts[-2].startswith("seed"):
        raise ValueError(
            f"{path}: expected .../{{model}}/{{task}}/{{recipe}}/{{hparams}}/seed{{N}}/result.json"
        )
    model, task, recipe, hparams, seed_dir = parts[-6:-1]
    return {
        "model": model,
        "task": task,
        "recipe": recipe,
        "hparams": hparams,
        "seed": int(seed_dir.removeprefix("seed")),
    }
