"""`blurbflow cell FOLDER`: one cell of the workflow, re-run by hand in this process to debug it.

It reads the config the cell ran with (the config files and `--config` overrides its snakemake
run recorded in result.json, blurbflow.util.provenance.launch; or those given, as snakemake takes
them) as the workflow does (validated, the schema's defaults filled, its own tasks registered),
expands it (blurbflow.config), finds the job of FOLDER and works out what the finetune rule
would give that job: its options (with a search's selection), its tokenized folder
`resources/tokenized/{model}/{task}/{input key}`, its data folder and its model. Then it trains
the one seed without the per-seed catch of blurbflow.train.job, so an error shows its whole
traceback and `--pdb` stops in the frame that raised (pdb.post_mortem).

A debug run never touches results/cells: it writes to the scratch folder
`results/debug/cells/{model}/{task}/{recipe}/{hparams}/seed{N}`, emptied before each run (no
checkpoint is resumed), and tracks nothing. docs/troubleshooting.md shows it in use."""

from __future__ import annotations

import difflib
import json
import os
import shlex
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
from blurbflow.util.provenance import launch_args

SCHEMA = Path("workflow/schemas/config.schema.yaml")  # relative to the workflow folder
CELLS = paths.CELLS
DEBUG = "results/debug/cells"  # scratch: a debug run's output, emptied before each run
SPLITS = ("train", "dev", "test")
DEFAULT_CONFIG = "config.yaml"  # the Snakefile's, when nothing is recorded or given


class CellNotRunnable(Exception):
    """Why the cell cannot be run yet (nothing ran): the message names the fix."""


@dataclass(frozen=True)
class DebugCell:
    job: CellJob
    options: CellOptions  # with its seed and a search's selection
    encoded: Path
    data: Path
    out: Path  # the scratch seed folder


def read_config(launch: dict) -> dict:
    """The config as the Snakefile reads it for this launch ({"configfiles", "config"}, as
    blurbflow.util.provenance records it): the files merged in order, then the `--config` overrides
    (`model=…` becomes the model `candidate`), the readable checks (blurbflow.config.validate), then
    Snakemake's schema validation, which fills defaults."""
    from snakemake.utils import update_config, validate

    if not SCHEMA.is_file():
        raise CellNotRunnable(f"no {SCHEMA} here: run `blurbflow cell` in the workflow's folder")
    config: dict = {}
    for configfile in launch["configfiles"]:
        try:
            update_config(config, yaml.safe_load(Path(configfile).read_text()) or {})
        except OSError as error:
            raise CellNotRunnable(f"--configfile {configfile}: {error.strerror}") from None
    update_config(config, launch["config"])
    try:
        apply_model_option(config)
        check_config(config, yaml.safe_load(SCHEMA.read_text()))
    except ConfigError as error:
        raise CellNotRunnable(f"{_shown(launch)}: invalid configuration: {error}") from None
    validate(config, str(SCHEMA.resolve()))
    register_tasks(config)
    # hub models from the workflow's cache, offline, as its jobs load them (common.smk)
    use_offline_cache(config.get("hf_cache", "resources/hf-cache"))
    return config


def _shown(launch: dict) -> str:
    return shlex.join(launch_args(launch))


def recorded_launch(job_folder: str, seed: int | None) -> dict | None:
    """The launch its seed's result.json recorded (any seed's, without `seed`); None if none."""
    seeds = [f"seed{seed}"] if seed is not None else sorted(os.listdir(job_folder) or [])
    for name in seeds:
        try:
            found = json.loads(Path(job_folder, name, "result.json").read_text()).get("launch")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(found, dict) and isinstance(found.get("configfiles"), list):
            return {"configfiles": found["configfiles"], "config": found.get("config") or {}}
    return None


def choose_launch(
    job_folder: str, seed: int | None, configfiles: list[str] | None, overrides: list[str] | None
) -> tuple[dict, str]:
    """(launch, where it came from). Given config files: those and the given `--config`, as
    snakemake takes them; else the recorded launch, the given `--config` merged over it; else
    config.yaml."""
    from snakemake.cli import parse_config  # Snakemake's own `--config` parser
    from snakemake.utils import update_config

    try:
        given = parse_config(overrides or [])
    except ValueError as error:
        raise CellNotRunnable(f"--config: {error}") from None
    if configfiles:
        return {"configfiles": list(configfiles), "config": given}, "given"
    recorded = recorded_launch(job_folder, seed) if os.path.isdir(job_folder) else None
    if recorded is None:
        return {"configfiles": [DEFAULT_CONFIG], "config": given}, "no launch recorded: default"
    update_config(recorded["config"], given)
    return recorded, "recorded in result.json"


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


def _build(launch: dict, target: str) -> str:
    """The snakemake command that builds `target` with this launch's config (target first:
    `--config` takes every word after it)."""
    return shlex.join([".venv/bin/snakemake", str(target), "--cores", "1", *launch_args(launch)])


def find_cell(folder: str, launch: dict) -> DebugCell:
    """What the finetune rule would run for this cell under `launch` (read_config);
    CellNotRunnable naming the snakemake command that builds whatever is missing."""
    config = read_config(launch)
    path, seed = parse_folder(folder)
    try:
        jobs = cell_jobs(expand_cells(config))
    except ConfigError as error:
        raise CellNotRunnable(f"{_shown(launch)}: invalid configuration: {error}") from None
    job = jobs.get(path)
    if job is None:
        close = difflib.get_close_matches(path, list(jobs), n=3)
        hint = f"; did you mean {', '.join(close)}" if close else ""
        raise CellNotRunnable(f"{path}: no such job in the studies of {_shown(launch)}{hint}")
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
                f"with: {_build(launch, encoded)}"
            )
    try:
        model_folder(job.options.model_options)
    except (OSError, ValueError) as error:  # ModelNotCached is a ValueError or OSError
        raise CellNotRunnable(f"{error}; or: {_build(launch, encoded)}") from None
    if job.options.selection_file and not Path(job.options.selection_file).is_file():
        raise CellNotRunnable(
            f"{job.options.selection_file}: its search has not chosen yet; run it with: "
            f"{_build(launch, job.options.selection_file)}"
        )
    options = with_selection(job.options).with_seed(seed)
    return DebugCell(job, options, encoded, data, Path(DEBUG, *path.split("/")[2:], f"seed{seed}"))


def prepare_out(cell: DebugCell, launch: dict) -> None:
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
            f"{_build(launch, source_job(cell.options) + '/seeds.json')}"
        )
    link = Path(DEBUG, source.removeprefix(CELLS + "/"), WEIGHTS)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.unlink(missing_ok=True)
    link.symlink_to(weights.resolve())


def debug_cell(
    folder: str,
    configfiles: list[str] | None = None,
    overrides: list[str] | None = None,
    max_steps: int | None = None,
    pdb: bool = False,
    threads: int = 1,
) -> int:
    """Run the cell of `folder` here (module doc); its exit status: 0 when it finished `ok`.
    An error propagates (its whole traceback), or with `pdb` stops in the debugger first."""
    from blurbflow.train.cell import train_cell

    launch, source = choose_launch(*parse_folder(folder), configfiles, overrides)
    cell = find_cell(folder, launch)
    prepare_out(cell, launch)
    print(f"cell {cell.options.cell_id} ({_shown(launch)}; {source})")
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
