"""One Snakemake job: the seeds of one (model, task, recipe, hparams), each a cell with its own
folder `seed{N}/` (result.json, predictions.parquet, checkpoint).

A seed whose result.json verifies (blurbflow.record.verify: a finished run of exactly these
options and this identity — model content, tokenized inputs, data checksums — with predictions
that re-score to its test metric) is kept, not retrained: adding a seed trains only that seed,
and a re-run after a failure trains only the seeds that failed or never finished. Any other seed
is retrained and the log says why. A seed that raises is recorded as `failed` with its error and
the others still run; the job then fails (the manifest is not written) so the scheduler shows it
and the next run retries it. The manifest `seeds.json` records the identity and each seed's
file digests, which the workflow checks when it is read (blurbflow.config.identity.stale_manifests).

The seeds to train run one after another in this process, or, where engine `cells_per_gpu`
allows (blurbflow.gpu_share), several at once on the job's GPU, each in its own process
(blurbflow.train.concurrent); either way each seed trains as blurbflow.train.seed_run does it
and gives the bits of its solo run.

The job holds its folder's lock throughout (blurbflow.train.lock: a second process stops naming
it), verifies its input folders before any seed (blurbflow.util.artefacts: a damaged one fails the
job, naming the file and the rule that rebuilds it), and keeps a seed's earlier result aside
while it retrains for a changed identity (blurbflow.record.earlier).
"""

from __future__ import annotations

from pathlib import Path

from blurbflow.config.grid import with_selection
from blurbflow.config.identity import SEED_FILES, cell_identity, seed_records
from blurbflow.config.init_from import WEIGHTS
from blurbflow.options import CellOptions
from blurbflow.record import earlier
from blurbflow.record.schema import FINISHED, Result
from blurbflow.record.verify import verify_result
from blurbflow.train import CellsFailed
from blurbflow.train.concurrent import SeedWork, cells_for_job, train_at_once
from blurbflow.train.device import select_device
from blurbflow.train.lock import job_lock
from blurbflow.train.seed_run import (  # noqa: F401 (the job's seed files, read from here too)
    SEED_LOG,
    TRACEBACK,
    failure_result,
    read_result,
    record_sharing,
    seed_log,
    set_aside_if_verified,
    train_seed,
    write_traceback,
)
from blurbflow.train.tracking import Tracking
from blurbflow.util.io import write_json_atomic

__all__ = ["FINISHED", "finished_result", "failure_result", "run_cell_job"]


def finished_result(
    result_path: Path, options: CellOptions, identity: dict | None = None
) -> tuple[Result | None, str | None]:
    """(result, None) if `result_path` verifies for a cell of `options` and `identity`, else
    (None, why it is retrained)."""
    result, problem = read_result(result_path)
    if result is not None:
        problem = verify_result(result_path, result, options, identity)
    return (result, None) if problem is None else (None, problem)


def kept_or_restored(
    result_path: Path, cell: CellOptions, identity: dict
) -> tuple[Result | None, str | None]:
    """The seed's verified result; else its earlier one kept aside by a retrain that did not
    finish (blurbflow.record.earlier), moved back if it verifies again (its identity came back);
    else (None, why it is retrained)."""
    kept, why = finished_result(result_path, cell, identity)
    if kept is None and earlier.restore(result_path.parent):
        restored, why = finished_result(result_path, cell, identity)
        if restored is not None:
            return restored, None
    return kept, why


def seed_files(options: CellOptions) -> tuple[str, ...]:
    """The files the manifest records per seed: a source of init_from keeps its weights too."""
    return (*SEED_FILES, WEIGHTS) if options.keep_weights else SEED_FILES


def run_cell_job(
    options: CellOptions,
    seeds: list[int],
    encoded_dir: Path,
    data_dir: Path,
    manifest: Path,
    threads: int = 1,
    tracked: Tracking | None = None,
) -> dict[int, str]:
    """Run (or keep) every seed, holding the job folder's lock (one writer: blurbflow.train.
    lock); write the manifest `seeds.json` only if none failed. `tracked`: the experiment
    trackers of every seed it trains (blurbflow.train.tracking; a kept seed is not tracked
    again)."""
    with job_lock(Path(manifest).parent):
        return _run_seeds(options, seeds, encoded_dir, data_dir, manifest, threads, tracked)


def _run_seeds(
    options, seeds, encoded_dir, data_dir, manifest, threads, tracked=None
) -> dict[int, str]:
    options = with_selection(options)  # a `hparams_from` recipe: the setting its search chose
    identity = cell_identity(options, encoded_dir, data_dir)  # once per job: hashes the model
    statuses: dict[int, str] = {}
    todo = []
    for seed in seeds:
        cell = options.with_seed(seed)
        result_path = Path(manifest).parent / f"seed{seed}" / "result.json"
        kept, why = kept_or_restored(result_path, cell, identity)
        if kept is not None:
            statuses[seed] = kept["status"]
            print(f"seed {seed}: kept ({kept['status']}, finished {kept.get('finished')})")
            continue
        todo.append(SeedWork(cell, why, result_path))
    common = {
        "encoded_dir": encoded_dir,
        "data_dir": data_dir,
        "threads": threads,
        "identity": identity,
        "tracked": tracked,
    }
    errors: list[str] = []
    cells = cells_for_job(options, len(todo), select_device()) if todo else 1
    if cells > 1:
        trained, errors = train_at_once(todo, cells, common)
        statuses.update(trained)
    else:  # one after another in this process
        for work in todo:
            with seed_log(work.result_path.parent):
                statuses[work.cell.seed] = train_seed(
                    work.cell, work.why, result_path=work.result_path, errors=errors, **common
                )
            record_sharing(work.result_path, 1, 1.0)
    if errors:
        raise CellsFailed(f"{len(errors)} of {len(seeds)} seeds failed: " + "; ".join(errors))
    write_json_atomic(
        manifest,
        {
            "seeds": {str(s): statuses[s] for s in seeds},
            "identity": identity,
            "files": seed_records(Path(manifest).parent, seeds, seed_files(options)),
        },
    )
    return statuses
