"""One Snakemake job: the seeds of one (model, task, recipe, hparams), each a cell with its own
folder `seed{N}/` (result.json, predictions.parquet, checkpoint).

A seed whose result.json already holds a finished run of exactly these options (status ok or
diverged) is kept, not retrained: adding a seed to a study trains only that seed, and a job
re-run after a failure trains only the seeds that failed or never finished. A seed that raises
is recorded as `failed` with its error and the others still run; the job then fails (the
manifest is not written) so the scheduler shows it and the next run retries it.
"""

from __future__ import annotations

import json
import re
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path

from blurbflow.config import options_json
from blurbflow.io import write_json_atomic
from blurbflow.train import CellsFailed, Preempted

FINISHED = ("ok", "diverged")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # terminal colours in some errors (torch's)


def finished_result(result_path: Path, options: dict) -> dict | None:
    """The result at `result_path` if it finished a run of exactly `options`, else None."""
    try:
        result = json.loads(result_path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(result, dict) or result.get("status") not in FINISHED:
        return None
    same = options_json(result.get("options") or {}) == options_json(options)
    return result if same else None


def failure_result(options: dict, error: BaseException) -> dict:
    from blurbflow.train.cell import where_run

    return {
        "cell": {k: options[k] for k in ("model", "task", "recipe", "hparams", "seed")},
        "options": options,
        "status": "failed",
        "error": ANSI.sub("", f"{type(error).__name__}: {error}"),
        "traceback": [ANSI.sub("", line) for line in traceback.format_exception(error)[-8:]],
        "finished": datetime.now(UTC).isoformat(),
        **where_run(),
    }


def run_cell_job(
    options: dict, seeds: list[int], encoded_dir: Path, data_dir: Path, manifest: Path,
    threads: int = 1,
) -> dict[int, str]:
    """Run (or keep) every seed; write the manifest `seeds.json` only if none failed."""
    from blurbflow.train.cell import train_cell

    statuses: dict[int, str] = {}
    errors = []
    for seed in seeds:
        cell = {**options, "seed": seed}
        result_path = Path(manifest).parent / f"seed{seed}" / "result.json"
        kept = finished_result(result_path, cell)
        if kept is not None:
            statuses[seed] = kept["status"]
            print(f"seed {seed}: kept ({kept['status']}, finished {kept.get('finished')})")
            continue
        try:
            statuses[seed] = train_cell(cell, encoded_dir, data_dir, result_path, threads)["status"]
        except Preempted:
            raise  # checkpoint saved: exit at once so the scheduler can requeue the job
        except Exception as error:  # one seed's crash must not cost the others
            traceback.print_exc(file=sys.stderr)
            write_json_atomic(result_path, failure_result(cell, error))
            statuses[seed] = "failed"
            errors.append(f"seed {seed}: {type(error).__name__}: {error}")
        print(f"seed {seed}: {statuses[seed]}", flush=True)
    if errors:
        raise CellsFailed(f"{len(errors)} of {len(seeds)} seeds failed: " + "; ".join(errors))
    write_json_atomic(manifest, {"seeds": {str(s): statuses[s] for s in seeds}})
    return statuses
