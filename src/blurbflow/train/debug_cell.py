"""`blurbflow cell FOLDER`: one cell of the workflow, re-run by hand in this process to debug it.

It reads the config as the workflow does (validated, the schema's defaults filled, its own tasks
registered), expands it (blurbflow.config), finds the job of FOLDER and works out what the
finetune rule would give that job: its options (with a search's selection), its tokenized folder
`resources/tokenized/{model}/{task}/{input key}`, its data folder and its model. Then it trains
the one seed without the per-seed catch of blurbflow.train.job, so an error shows its whole
traceback and `--pdb` stops in the frame that raised (pdb.post_mortem).

A debug run never touches results/cells: it writes to the scratch folder
`results/debug/cells/{model}/{task}/{recipe}/{hparams}/seed{N}`, emptied before each run (no
checkpoint is resumed), and tracks nothing. docs/troubleshooting.md shows it in use."""

from __future__ import annotations

import difflib
import os
import shutil
import traceback
from dataclasses import dataclass
from pathlib import Path

import yaml

from blurbflow.config import CellJob, cell_jobs, expand_cells, input_key
from blurbflow.config.grid import with_selection
from blurbflow.config.init_from import WEIGHTS, source_job, source_seed
from blurbflow.config.validate import check_config
from blurbflow.models.candidate import apply_model_option
from blurbflow.models.prefetch import model_folder, use_offline_cache
from blurbflow.options import CellOptions
from blurbflow.tasks import register_tasks
from blurbflow.util import paths
from blurbflow.util.errors import ConfigError

SCHEMA = Path("workflow/schemas/config.schema.yaml")  # relative to the workflow folder
CELLS = paths.CELLS
DEBUG = "results/debug/cells"  # scratch: a debug run's output, emptied before each run
SPLITS = ("train", "dev", "test")


class CellNotRunnable(Exception):
    """Why the cell cannot be run yet (nothing ran): the message names the fix."""


@dataclass(frozen=True)
class DebugCell:
    job: CellJob
    options: CellOptions  # with its seed and a search's selection
    encoded: Path
    data: Path
    out: Path  # the scratch seed folder


def read_config(configfile: str, model: str | None = None) -> dict:
    """The config as the Snakefile reads it: `--config model=…` (here `model`), the readable
    checks (blurbflow.config.validate), then Snakemake's schema validation, which fills defaults."""
    from snakemake.utils import validate

    if not SCHEMA.is_file():
        raise CellNotRunnable(f"no {SCHEMA} here: run `blurbflow cell` in the workflow's folder")
    try:
        config = yaml.safe_load(Path(configfile).read_text())
    except OSError as error:
        raise CellNotRunnable(f"--configfile {configfile}: {error.strerror}") from None
    if model:
        config["model"] = model
    try:
        apply_model_option(config)
        check_config(config, yaml.safe_load(SCHEMA.read_text()))
    except ConfigError as error:
        raise CellNotRunnable(f"{configfile}: invalid configuration: {error}") from None
    validate(config, str(SCHEMA.resolve()))
    register_tasks(config)
    # hub models from the workflow's cache, offline, as its jobs load them (common.smk)
    use_offline_cache(config.get("hf_cache", "resources/hf-cache"))
    return config


def parse_folder(folder: str) -> tuple[str, int | None]:
    """(job folder `results/cells/{model}/{task}/{recipe}/{hparams}`, the seed or None)."""
    path = Path(folder)
    if path.is_absolute():
        try:
            path = path.relative_to(Path.cwd())
        except ValueError:
            raise CellNotRunnable(f"{folder}: not inside this workflow folder") from None
    parts = os.path.normpath(path).split(os.sep)
    seed = None
    if parts and parts[-1].startswith("seed"):
        if not parts[-1][4:].isdigit():
            raise CellNotRunnable(f"{folder}: {parts[-1]!r} is not seed<number>")
        seed = int(parts.pop()[4:])
    if len(parts) != 6 or "/".join(parts[:2]) != CELLS:
        raise CellNotRunnable(
            f"{folder}: expected {CELLS}/<model>/<task>/<recipe>/<hparams>[/seed<N>]"
        )
    return "/".join(parts), seed


def _build(configfile: str, target: str) -> str:
    return f"snakemake --configfile {configfile} --cores 1 {target}"


def find_cell(folder: str, configfile: str = "config.yaml", model: str | None = None) -> DebugCell:
    """What the finetune rule would run for this cell; CellNotRunnable naming the snakemake
    command that builds whatever is missing."""
    config = read_config(configfile, model)
    path, seed = parse_folder(folder)
    try:
        jobs = cell_jobs(expand_cells(config))
    except ConfigError as error:
        raise CellNotRunnable(f"{configfile}: invalid configuration: {error}") from None
    job = jobs.get(path)
    if job is None:
        close = difflib.get_close_matches(path, list(jobs), n=3)
        hint = f"; did you mean {', '.join(close)}" if close else ""
        raise CellNotRunnable(f"{path}: no such job in the studies of {configfile}{hint}")
    if seed is None:
        seed = job.seeds[0]
    elif seed not in job.seeds:  # adaptive seeds: later rounds add seeds the plan has not
        print(f"note: seed {seed} is not one of this job's planned seeds {list(job.seeds)}")
    encoded = Path(paths.tokenized(job.model, job.task, input_key(job.task, job.options.inputs)))
    data = Path(paths.data(job.task))
    for what, where in (("prepared data", data), ("tokenized inputs", encoded)):
        missing = [s for s in SPLITS if not (where / f"{s}.parquet").is_file()]
        if missing:
            raise CellNotRunnable(
                f"{where}: no {what} ({', '.join(missing)} missing); build them (and the model) "
                f"with: {_build(configfile, encoded)}"
            )
    try:
        model_folder(job.options.model_options)
    except (OSError, ValueError) as error:  # ModelNotCached is a ValueError or OSError
        raise CellNotRunnable(f"{error}; or: {_build(configfile, encoded)}") from None
    if job.options.selection_file and not Path(job.options.selection_file).is_file():
        raise CellNotRunnable(
            f"{job.options.selection_file}: its search has not chosen yet; run it with: "
            f"{_build(configfile, job.options.selection_file)}"
        )
    options = with_selection(job.options).with_seed(seed)
    return DebugCell(job, options, encoded, data, Path(DEBUG, *path.split("/")[2:], f"seed{seed}"))


def prepare_out(cell: DebugCell, configfile: str) -> None:
    """Empty the scratch folder; an init_from cell finds its source's weights beside it, as
    blurbflow.config.init_from.source_weights looks for them (a link to the real ones)."""
    shutil.rmtree(cell.out, ignore_errors=True)
    cell.out.mkdir(parents=True)
    if not cell.options.init_from:
        return
    source = f"{source_job(cell.options)}/seed{source_seed(cell.options)}"
    weights = Path(source, WEIGHTS)
    if not weights.is_file():
        raise CellNotRunnable(
            f"{weights}: the source of init_from has not run; run it with: "
            f"{_build(configfile, source_job(cell.options) + '/seeds.json')}"
        )
    link = Path(DEBUG, source.removeprefix(CELLS + "/"), WEIGHTS)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(weights.resolve())


def debug_cell(
    folder: str,
    configfile: str = "config.yaml",
    max_steps: int | None = None,
    pdb: bool = False,
    threads: int = 1,
    model: str | None = None,
) -> int:
    """Run the cell of `folder` here (module doc); its exit status: 0 when it finished `ok`.
    An error propagates (its whole traceback), or with `pdb` stops in the debugger first."""
    from blurbflow.train.cell import train_cell

    cell = find_cell(folder, configfile, model)
    prepare_out(cell, configfile)
    print(f"cell {cell.options.cell_id} (config {configfile})")
    print(f"  tokenized {cell.encoded}, data {cell.data}, model {cell.options.model_source}")
    print(f"  writing to {cell.out} (scratch; {CELLS} is left alone)", flush=True)
    extra = {} if max_steps is None else {"max_steps": int(max_steps)}
    try:
        result = train_cell(
            cell.options, cell.encoded, cell.data, cell.out / "result.json", threads, **extra
        )
    except Exception as error:
        if not pdb:
            raise
        traceback.print_exc()
        import pdb as debugger

        debugger.post_mortem(error.__traceback__)
        return 1
    print(f"{result['status']}: dev {result.get('dev')}, test {result.get('test')}")
    print(f"result: {cell.out / 'result.json'}")
    return 0 if result["status"] == "ok" else 1
