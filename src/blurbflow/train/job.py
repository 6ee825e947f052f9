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

The job holds its folder's lock throughout (blurbflow.train.lock: a second process stops naming
it), verifies its input folders before any seed (blurbflow.util.artefacts: a damaged one fails the
job, naming the file and the rule that rebuilds it), and keeps a seed's earlier result aside
while it retrains for a changed identity (blurbflow.record.earlier).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path

from blurbflow.config.grid import with_selection
from blurbflow.config.identity import SEED_FILES, cell_identity, seed_records
from blurbflow.config.init_from import WEIGHTS
from blurbflow.options import CellOptions
from blurbflow.record import earlier
from blurbflow.record.schema import FINISHED, Result, cell_key
from blurbflow.record.verify import verify_result
from blurbflow.train import CellsFailed, Preempted
from blurbflow.train.cell import train_cell
from blurbflow.train.lock import job_lock
from blurbflow.train.tracking import Tracking
from blurbflow.util.io import write_json_atomic
from blurbflow.util.provenance import where_run

__all__ = ["FINISHED", "finished_result", "failure_result", "run_cell_job"]
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # terminal colours in some errors (torch's)
SEED_LOG = "train.log"  # per seed folder: what that seed printed, each time it trained
TRACEBACK = "traceback.txt"  # per seed folder: a failed seed's whole traceback


def read_result(result_path: Path) -> tuple[Result | None, str | None]:
    """The parsed result.json (record/schema.py), or None and why not."""
    try:
        return json.loads(Path(result_path).read_text()), None
    except FileNotFoundError:
        return None, "no result.json"
    except (OSError, ValueError) as error:
        return None, f"unreadable result.json ({type(error).__name__})"


def finished_result(
    result_path: Path, options: CellOptions, identity: dict | None = None
) -> tuple[Result | None, str | None]:
    """(result, None) if `result_path` verifies for a cell of `options` and `identity`, else
    (None, why it is retrained)."""
    result, problem = read_result(result_path)
    if result is not None:
        problem = verify_result(result_path, result, options, identity)
    return (result, None) if problem is None else (None, problem)


def failure_result(options: CellOptions, error: BaseException) -> Result:
    """The result.json of a seed that raised: what it was and why it failed."""
    return {
        "cell": cell_key(options),
        "options": options.to_dict(),
        "status": "failed",
        "error": ANSI.sub("", f"{type(error).__name__}: {error}"),
        "traceback": [ANSI.sub("", line) for line in traceback.format_exception(error)[-8:]],
        "finished": datetime.now(UTC).isoformat(),
        **where_run(),
    }


def write_traceback(seed_dir: Path, error: BaseException) -> Path:
    """A failed seed's whole traceback (chained causes included) beside its result.json."""
    path = Path(seed_dir) / TRACEBACK
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ANSI.sub("", "".join(traceback.format_exception(error))))
    return path


class _Tee(io.TextIOBase):
    """Writes to the job's stream and, while a seed trains, to that seed's log. One per stream
    for the whole process (`_tee`): a logging handler keeps the stream it saw when it was made
    (transformers' keeps the sys.stderr of the seed that first imported it), so what it writes
    must follow the seed training now and never reach a closed log."""

    def __init__(self, stream):
        self.stream, self.log = stream, None

    def write(self, text: str) -> int:
        self.stream.write(text)
        if self.log is not None:
            self.log.write(text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()
        if self.log is not None:
            self.log.flush()

    # what libraries ask of sys.stdout (trackers, progress bars): the job's stream answers
    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    @property
    def encoding(self):
        return getattr(self.stream, "encoding", "utf-8")

    def __getattr__(self, name):
        return getattr(self.stream, name)


_TEES: dict[str, _Tee] = {}  # "stdout"/"stderr" -> the process's tee of it


def _tee(name: str) -> _Tee:
    """The process's tee of sys.`name`, writing to the stream sys.`name` is now. Logging
    handlers made before it (holding that stream itself) are pointed at it too."""
    stream = getattr(sys, name)
    tee = _TEES.setdefault(name, _Tee(stream))
    if stream is not tee:
        tee.stream = stream
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for handler in (h for logger in loggers for h in getattr(logger, "handlers", ())):
        if type(handler) is logging.StreamHandler and handler.stream is stream:
            handler.setStream(tee)
    return tee


@contextlib.contextmanager
def seed_log(seed_dir: Path):
    """What Python prints while a seed trains, logging's handlers included, also goes to
    `seed{N}/train.log` (appended: a resumed or retried seed keeps its history). Output written
    straight to the file descriptors (C++ warnings) reaches the job log only."""
    Path(seed_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(seed_dir) / SEED_LOG, "a", buffering=1) as handle:
        handle.write(f"== {datetime.now(UTC).isoformat()} {Path(seed_dir).name}\n")
        out, err = _tee("stdout"), _tee("stderr")
        out.log = err.log = handle
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                yield
        finally:
            out.log = err.log = None  # before the log closes: later writes reach the job's only


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


def set_aside_if_verified(result_path: Path, cell: CellOptions) -> bool:
    """Before a retrain: keep aside a finished result that verifies but for its identity, so a
    failed retrain does not lose it."""
    result, problem = read_result(result_path)
    if problem is None and verify_result(result_path, result, cell, rescore=False) is None:
        return bool(earlier.keep_aside(result_path.parent))
    return False


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
    errors = []
    for seed in seeds:
        cell = options.with_seed(seed)
        result_path = Path(manifest).parent / f"seed{seed}" / "result.json"
        kept, why = kept_or_restored(result_path, cell, identity)
        if kept is not None:
            statuses[seed] = kept["status"]
            print(f"seed {seed}: kept ({kept['status']}, finished {kept.get('finished')})")
            continue
        with seed_log(result_path.parent):
            statuses[seed] = _train_seed(
                cell, why, encoded_dir, data_dir, result_path, threads, identity, tracked, errors
            )
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


def _train_seed(cell, why, encoded_dir, data_dir, result_path, threads, identity, tracked, errors):
    """Train one seed; a crash is recorded (result.json, traceback.txt) and added to `errors`."""
    seed = cell.seed
    print(f"seed {seed}: training ({why})", flush=True)
    if set_aside_if_verified(result_path, cell):
        print(f"seed {seed}: earlier result kept aside until the retrain finishes", flush=True)
    try:
        status = train_cell(cell, encoded_dir, data_dir, result_path, threads, identity, tracked)[
            "status"
        ]
        earlier.discard(result_path.parent)
        (result_path.parent / TRACEBACK).unlink(missing_ok=True)  # an earlier failure's
    except Preempted:
        raise  # checkpoint saved: exit at once so the scheduler can requeue the job
    except Exception as error:  # one seed's crash must not cost the others
        traceback.print_exc(file=sys.stderr)
        write_traceback(result_path.parent, error)
        write_json_atomic(result_path, failure_result(cell, error))
        status = "failed"
        errors.append(f"seed {seed}: {type(error).__name__}: {error}")
    print(f"seed {seed}: {status}", flush=True)
    return status
