"""Intermediate fine-tuning (recipe key `init_from`): a cell starts from the fine-tuned weights of
another cell of the same model, e.g. BioASQ factoid from SQuAD2.0 (BioM-Transformers).

`init_from: {task: squad2, recipe: squad, seed: same}` names the source cells; the source recipe
must run as one hparams job (one grid point, or a `hparams_from` recipe: folder `selected`), and
`seed` picks the source seed: `same` (seed N starts from source seed N) or a fixed seed.

- Only a source job some dependant starts from keeps weights: expansion adds `keep_weights: true`
  to its options, and each of its seeds saves `seed{N}/weights.pt` (the state dict after the last
  step, encoder + head) with its sha256 in result.json. The key is an option, so a result proves
  it kept weights; every seed of the job keeps them, so a dependant's seed list never changes the
  source's options.
- The dependant job's input is the source job's seeds.json: a re-run source re-runs it. Its
  identity records the sha256 of the source weights it loaded (`init_weights`), so a result
  trained from other weights does not verify (blurbflow.record.verify hashes the file on disk).
- Loading (`blurbflow.train.weights`) is type-agnostic: every tensor whose name and shape
  match is copied, before layer surgery (a re-initialised top layer is re-initialised after
  loading); a head of another shape (NER → STS) stays fresh. What was loaded goes to the log
  and result.json.
"""

from __future__ import annotations

import os
from pathlib import Path

from blurbflow.config.grid import SELECTED, grid_points, hparams_name
from blurbflow.config.identity import file_sha256
from blurbflow.options import CellOptions
from blurbflow.util import paths
from blurbflow.util.errors import ConfigError

WEIGHTS = "weights.pt"  # a keep_weights cell's fine-tuned state dict, in its seed folder
INIT_KEYS = ("task", "recipe", "seed")


def init_from_options(config: dict, recipe: str, resolved: dict, resolve) -> dict:
    """The recipe's `init_from`, checked and completed with the source's hparams folder:
    {task, recipe, hparams, seed}. `resolve(config, name)` resolves a recipe."""
    from blurbflow.tasks import get_task

    where = f"recipes.{recipe}.init_from"
    given = resolved["init_from"]
    if (
        not isinstance(given, dict)
        or not {"task", "recipe"} <= set(given)
        or set(given) - set(INIT_KEYS)
    ):
        raise ConfigError(
            f"{where}: expected a mapping {{task: <task>, recipe: <recipe>, seed: same|<seed>}}, "
            f"got {given!r}"
        )
    task, source, seed = given["task"], given["recipe"], given.get("seed", "same")
    try:
        get_task(task, config)
    except KeyError as error:
        raise ConfigError(f"{where}.task: {error.args[0]}") from None
    if source == recipe:
        raise ConfigError(f"{where}.recipe: a recipe cannot start from its own cells")
    try:
        source_options = resolve(config, source)
    except ConfigError as error:
        raise ConfigError(f"{where}.recipe: {error}") from None
    if source_options.get("init_from"):
        raise ConfigError(
            f"{where}.recipe: {source!r} itself starts from another cell (init_from); chains are "
            "not supported: start from a recipe without init_from"
        )
    points = grid_points(source_options)
    if len(points) != 1:
        raise ConfigError(
            f"{where}.recipe: {source!r} has a grid of {len(points)} points; a source must be "
            "one hparams job: give it one lr, batch size and technique setting, or name a "
            "`hparams_from` recipe (it trains the setting its search selected)"
        )
    if seed != "same" and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ConfigError(f"{where}.seed: {seed!r}; use `same` or a seed number (≥ 0)")
    lr, batch_size, axes = points[0]
    hparams = SELECTED if lr is None else hparams_name(lr, batch_size, axes)
    return {"task": task, "recipe": source, "hparams": hparams, "seed": seed}


def source_job(options: CellOptions) -> str:
    """The folder of the source job of a dependant's options (relative, as the rules write)."""
    init = options.init_from
    return paths.job_folder(options.model, init.task, init.recipe, init.hparams)


def source_seed(options: CellOptions) -> int:
    seed = options.init_from.seed
    return int(options.seed) if seed == "same" else int(seed)


def source_weights(options: CellOptions, cell_dir: str | os.PathLike) -> Path:
    """The weights a dependant cell (options with its seed) loads; `cell_dir`: its own seed
    folder `…/results/cells/{model}/{task}/{recipe}/{hparams}/seed{N}` (so any project root)."""
    cells = Path(cell_dir).parents[4]  # …/results/cells
    job = source_job(options).removeprefix(f"{paths.CELLS}/")
    return cells / job / f"seed{source_seed(options)}" / WEIGHTS


def with_source_weights(identity: dict, options: CellOptions, cell_dir) -> dict:
    """The cell's identity with the sha256 of the source weights (unchanged without init_from);
    FileNotFoundError naming the source job when they are missing."""
    if not options.init_from:
        return identity
    path = source_weights(options, cell_dir)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no source weights for init_from; run the source job "
            f"{source_job(options)} (snakemake does: it is an input of this job)"
        )
    return {**identity, "init_weights": file_sha256(path)}


def link_cells(cells: dict, studies: dict, check: bool, keeping_weights) -> dict:
    """The source cells of dependants get `keep_weights: true`; with `check`, every dependant's
    source cell must be one of `cells` (else the study is named: no study runs it).
    `keeping_weights(cell)` returns the cell with `keep_weights` set."""
    keep = set()
    for cell in cells.values():
        if not cell.options.init_from:
            continue
        options = cell.options
        source = f"{source_job(options)}/seed{source_seed(options)}"
        if check and source not in cells:
            init = options.init_from
            study = next(
                (n for n, s in studies.items() if cell.recipe in s.get("recipes", [])), "?"
            )
            raise ConfigError(
                f"studies.{study}: recipe {cell.recipe!r} starts from {source} (init_from), which "
                f"no study runs; add recipe {init.recipe!r}, task {init.task!r} and seed "
                f"{source_seed(options)} for model {cell.model} to a study"
            )
        keep.add(source.rsplit("/", 1)[0])
    if not keep:
        return cells
    return {
        path: keeping_weights(cell) if path.rsplit("/", 1)[0] in keep else cell
        for path, cell in cells.items()
    }
