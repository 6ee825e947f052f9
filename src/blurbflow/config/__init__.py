"""Turn a validated config into cells: model × task × recipe × hparams × seed, each with its
typed options (blurbflow.options.CellOptions). The package holds every step from the config to
the cells: its keys checked (validate, schema), recipes resolved (recipes), their grids and
`hparams_from` (grid), seeds and the study keys (study_plan), `init_from` (init_from) and a
cell's identity (identity).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from dataclasses import dataclass

from blurbflow.config.grid import (
    SELECTED,
    SELECTED_KEYS,
    check_hparams_from,
    check_selects,
    check_sources_run,
    grid_points,
    hparams_name,
    hparams_sources,
    selection_file,
)
from blurbflow.config.init_from import init_from_options, link_cells
from blurbflow.config.recipes import COSMETIC_KEYS, epochs_for, resolve_recipe
from blurbflow.config.study_plan import (
    adaptive_spec,
    check_study_selection,
    chosen_on_reference,
    evaluation_options,
    reference_options,
    runs_on,
    study_seeds,
    task_runs,
)
from blurbflow.config.validate import check_names, grid_collision
from blurbflow.models.limits import (
    available_folder,
    first_token_problem,
    model_type,
    position_limit,
)
from blurbflow.models.prefetch import model_settings
from blurbflow.options import CellOptions, InitFrom, InputOptions, check_options
from blurbflow.options.lora import check_large
from blurbflow.tasks import get_task
from blurbflow.tasks.crossval import PARENT
from blurbflow.util import paths
from blurbflow.util.errors import ConfigError


@dataclass(frozen=True)
class Cell:
    model: str
    task: str
    recipe: str
    hparams: str
    seed: int
    options: CellOptions

    @property
    def path(self) -> str:
        job = paths.job_folder(self.model, self.task, self.recipe, self.hparams)
        return f"{job}/seed{self.seed}"


@dataclass(frozen=True)
class CellJob:
    """One Snakemake job: the seeds of one (model, task, recipe, hparams), run one after the
    other in one process. Its options are the cells' options without the seed."""

    model: str
    task: str
    recipe: str
    hparams: str
    options: CellOptions
    seeds: tuple[int, ...]

    @property
    def path(self) -> str:
        return paths.job_folder(self.model, self.task, self.recipe, self.hparams)


def cell_jobs(cells: dict[str, Cell]) -> dict[str, CellJob]:
    """Cells batched by everything but the seed, keyed by job folder (docs/concepts.md: one job
    per cell makes a paper-scale dry run take twice as long)."""
    seeds: dict[str, list[int]] = {}
    first: dict[str, Cell] = {}
    for cell in cells.values():
        key = cell.path.rsplit("/", 1)[0]
        seeds.setdefault(key, []).append(cell.seed)
        first.setdefault(key, cell)
    return {
        key: CellJob(
            cell.model,
            cell.task,
            cell.recipe,
            cell.hparams,
            cell.options.job,
            tuple(sorted(seeds[key])),
        )
        for key, cell in first.items()
    }


def cell_options(
    config: dict, model: str, task: str, recipe: str, lr, batch_size, axes: dict | None = None
) -> CellOptions:
    """Every option a cell's result depends on (the job's params: its rerun trigger), without
    the seed. `axes`: this grid point's values of the technique hyperparameters the recipe
    lists."""
    resolved = resolve_recipe(config, recipe)
    spec = get_task(task, config)
    tasks_cfg = config.get("tasks") or {}
    task_cfg = tasks_cfg.get(task) or tasks_cfg.get(PARENT.get(task, (task,))[0]) or {}
    given = {k: v for k, v in resolved.items() if k not in ("lr", "batch_size", *COSMETIC_KEYS)}
    given.update(axes or {})
    given.update(
        task=task,
        recipe=recipe,
        lr=None if lr is None else float(lr),
        batch_size=None if batch_size is None else int(batch_size),
        hparams=SELECTED if lr is None else hparams_name(lr, batch_size, axes),
        epochs=epochs_for(resolved["epochs"], task, f"recipes.{recipe}"),
        max_length=int(task_cfg.get("max_length", resolved.get("max_length") or spec.max_length)),
        code_version=str(config.get("code_version", "1")),
    )
    # model, model_source, and of revision, cased, add_prefix_space, trust_remote_code,
    # untrained_pooler only those the model's entry sets, so cells of other models keep their params
    given.update(model_settings(model, config["models"][model], cell=True))
    if resolved.get("hparams_from"):
        # chosen by the search (blurbflow.results.handover); epochs: the searches' budget, an
        # upper bound for the job's resources until the selection sets it
        sources = hparams_sources(resolved)
        budgets = [
            epochs_for(resolve_recipe(config, s)["epochs"], task, f"recipes.{s}") for s in sources
        ]
        given.update(dict.fromkeys(SELECTED_KEYS), epochs=max(budgets), hparams=SELECTED)
        given.update(hparams_from=sources, selection_file=selection_file(model, task, recipe))
    if resolved.get("init_from"):  # starts from another cell's weights (blurbflow.config.init_from)
        given["init_from"] = InitFrom(**init_from_options(config, recipe, resolved, resolve_recipe))
    if given["train_on"] == "train+dev":
        # Nothing is held out to select on: the last epoch is the model (dev is still scored).
        given["select"] = "last"
    options = CellOptions.from_dict(given, where=f"recipes.{recipe}")
    # the rules between options (blurbflow.options.check_options), now the task is known
    entities, span = spec.kind.inputs == "entities", spec.kind.target == "span"
    check_options(options, f"recipes.{recipe}", entities=entities, span=span)
    check_large(options, f"recipes.{recipe}")  # lora, frozen_dtype (blurbflow.options.lora)
    return options


def input_key(task: str, inputs: InputOptions) -> str:
    """The tokenization cache key of a cell: its input length and the input options that apply
    to its task type, e.g. `L256-markers` (RE), `L512-BIOUL` (NER), `L512-single` (QA/STS),
    `L512` (HoC). Options that only change training (lr, head, pooling …) are not part of it, so
    changing them never re-tokenizes; `resources/tokenized/{model}/{task}/{key}` is the folder."""
    return inputs.key(get_task(task).kind.input_options)


def max_length_key(config: dict, task: str, recipe: str) -> str:
    """The config key a cell's max_length comes from, as `cell_options` resolves it: the task's
    entry (a cross-validation fold: its task's), the recipe or one it extends, `defaults`."""
    tasks_cfg = config.get("tasks") or {}
    parent = PARENT.get(task, (task,))[0]
    name = task if tasks_cfg.get(task) else parent
    if "max_length" in (tasks_cfg.get(name) or {}):
        return f"tasks.{name}.max_length"
    recipes, name = config.get("recipes") or {}, recipe
    while name:
        own = recipes.get(name) or {}
        if "max_length" in own:
            return f"recipes.{name}.max_length"
        name = own.get("extends")
    if "max_length" in (config.get("defaults") or {}):
        return "defaults.max_length"
    return f"the default max_length of task {task} (set tasks.{task}.max_length)"


def check_max_length(config: dict, jobs) -> None:
    """Every job's max_length fits its model's positions, for models whose files are there
    (blurbflow.models.limits; the tokenize step checks the others)."""
    limits: dict[str, tuple[int | None, str | None]] = {}
    for job in jobs:
        options = job.options
        if options.model not in limits:
            folder = available_folder(options.model_options)
            limits[options.model] = (folder and position_limit(folder), model_type(folder))
        limit, kind = limits[options.model]
        if problem := first_token_problem(options, kind):
            raise ConfigError(f"recipes.{options.recipe}: {problem}")
        if limit is not None and options.max_length > limit:
            raise ConfigError(
                f"{max_length_key(config, options.task, options.recipe)}: "
                f"{options.max_length} is more than model {options.model!r} takes ({limit} "
                f"positions, its config.json); lower it to at most {limit}"
            )


def expand_cells(
    config: dict, studies: list[str] | None = None, adaptive: dict | None = None
) -> dict[str, Cell]:
    """All cells of the selected studies (all by default), keyed by their output folder. A
    task with adaptive seeds has seeds 1..n per (model, task, recipe): n from `adaptive` (what
    the rounds decided, blurbflow.results.rounds), else the plan's `start`."""
    check_names(config)
    check_study_selection(config)
    check_selects(config.get("studies", {}))  # `select: common_epoch`
    for name in config.get("recipes", {}):
        if resolve_recipe(config, name).get("hparams_from"):
            check_hparams_from(config, name, resolve_recipe)
    cells: dict[str, Cell] = {}
    whole_grids = _whole_grids(config)
    owners: dict[str, str] = {}  # adaptive (model, task, recipe) folder -> its study
    runs: dict[str, set[str]] = {}  # (model, task, recipe) folder -> the studies that run it
    for name, study in config.get("studies", {}).items():
        if studies is not None and name not in studies:
            continue
        for model, task, recipe in itertools.product(
            study["models"], study["tasks"], study["recipes"]
        ):
            if not runs_on(study, recipe, model, task):
                continue
            # a cross-validated task runs its tune fold's grid, then each other fold once
            for run, tune in task_runs(study, task):
                points = grid_points(resolve_recipe(config, recipe))
                # Gu et al.: models besides the reference ones train only the point those chose
                # (unless another study trains their whole grid anyway)
                on_reference = (
                    not tune
                    and (model, run, recipe) not in whole_grids
                    and chosen_on_reference(study, model, task, recipe, len(points))
                )
                for lr, bs, axes in points[:1] if tune or on_reference else points:
                    options = cell_options(config, model, run, recipe, lr, bs, axes)
                    if tune:
                        options = evaluation_options(options, tune)
                    if on_reference:
                        options = reference_options(options, study["reference_models"])
                    spec = adaptive_spec(study, task)
                    seeds = study_seeds(study, task)
                    if spec is not None:
                        count = (adaptive or {}).get((model, run, recipe), spec["start"])
                        seeds = range(1, count + 1)
                        owners.setdefault(cell_path(model, run, recipe), name)
                    for seed in seeds:
                        cell = Cell(
                            model, run, recipe, options.hparams, seed, options.with_seed(seed)
                        )
                        previous = cells.get(cell.path)
                        if previous is not None and previous.options != cell.options:
                            raise grid_collision(
                                recipe, cell.hparams, previous.options, cell.options
                            )
                        cells[cell.path] = cell
                        runs.setdefault(cell.path.rsplit("/", 2)[0], set()).add(name)
    for folder, owner in owners.items():
        if runs.get(folder, {owner}) != {owner}:
            others = ", ".join(sorted(runs[folder] - {owner}))
            raise ConfigError(
                f"studies.{owner}.seeds: adaptive seeds, but {folder} is also run by {others}; "
                "an adaptive study's cells must be its own"
            )
    if studies is None:  # a subset may take its searches from studies left out
        check_sources_run(cells, config.get("studies", {}))
    # sources of `init_from` keep their weights (a subset: those it runs)
    return link_cells(cells, config.get("studies", {}), studies is None, _keeping_weights)


def cell_path(model: str, task: str, recipe: str) -> str:
    return paths.RECIPE.format(model=model, task=task, recipe=recipe)


def _whole_grids(config: dict) -> set[tuple[str, str, str]]:
    """(model, task, recipe) whose whole grid some study trains (not on reference models)."""
    found = set()
    points = {name: len(grid_points(resolve_recipe(config, name))) for name in config["recipes"]}
    for study in config.get("studies", {}).values():
        for model, task, recipe in itertools.product(
            study["models"], study["tasks"], study["recipes"]
        ):
            if runs_on(study, recipe, model, task) and not chosen_on_reference(
                study, model, task, recipe, points[recipe]
            ):
                found.update(
                    (model, run, recipe) for run, tune in task_runs(study, task) if not tune
                )
    return found


def _keeping_weights(cell: Cell) -> Cell:
    return dataclasses.replace(cell, options=cell.options.replace(keep_weights=True))


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:12]
