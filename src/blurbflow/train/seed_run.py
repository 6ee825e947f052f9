"""One seed of a job trained, in the job's process or in one of its own (blurbflow.train.
concurrent): what it prints goes to `seed{N}/train.log` too, a crash is recorded (result.json of
status failed, traceback.txt) instead of costing the job's other seeds, an earlier result that
verifies but for its identity is kept aside until the retrain finishes, and the result records
how many of the job's seeds shared the GPU with it (`record_sharing`)."""

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

from blurbflow.options import CellOptions
from blurbflow.record import earlier
from blurbflow.record.schema import Result, cell_key
from blurbflow.record.verify import verify_result
from blurbflow.train import Preempted
from blurbflow.train.cell import train_cell
from blurbflow.util.io import write_json_atomic
from blurbflow.util.provenance import where_run

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


def record_failure(cell: CellOptions, result_path: Path, error: BaseException) -> str:
    """result.json (failed) and traceback.txt of a seed that raised; its line for the job."""
    write_traceback(result_path.parent, error)
    write_json_atomic(result_path, failure_result(cell, error))
    return f"seed {cell.seed}: {type(error).__name__}: {error}"


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


def set_aside_if_verified(result_path: Path, cell: CellOptions) -> bool:
    """Before a retrain: keep aside a finished result that verifies but for its identity, so a
    failed retrain does not lose it."""
    result, problem = read_result(result_path)
    if problem is None and verify_result(result_path, result, cell, rescore=False) is None:
        return bool(earlier.keep_aside(result_path.parent))
    return False


def train_seed(
    cell, why, encoded_dir, data_dir, result_path, threads, identity, tracked, errors
) -> str:
    """Train one seed; its status. A crash is recorded (result.json, traceback.txt) and added
    to `errors`; Preempted (its checkpoint saved) is raised on."""
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
        errors.append(record_failure(cell, result_path, error))
        status = "failed"
    print(f"seed {seed}: {status}", flush=True)
    return status


def record_sharing(result_path: Path, cells: int, sharing: float) -> None:
    """Add to a finished seed's result.json how many of its job's seeds the job ran at once
    (engine.cells_per_gpu) and how many shared the GPU with it on average over its run
    (engine.cells_sharing, itself included); its gpu_hours become its share of the GPU's."""
    result, problem = read_result(result_path)
    if problem is not None or not isinstance(result.get("engine"), dict):
        return  # no step ran (a failure before training): nothing shared
    result["engine"].update(cells_per_gpu=int(cells), cells_sharing=round(float(sharing), 3))
    if result.get("gpu_hours"):
        result["gpu_hours"] = round(result["wall_seconds"] / max(1.0, sharing) / 3600, 6)
    write_json_atomic(result_path, result)
