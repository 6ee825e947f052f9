"""Turn a validated config into cells: model × task × recipe × hparams × seed.

Recipes are data: a recipe is `defaults` overlaid with its own keys (and those of the recipe
it `extends`). Its grid (lists of lr, batch size, technique settings) and `hparams_from` are
blurbflow.grid's; seeds and the study keys are blurbflow.studies'. `epochs` may be a number or a
mapping task → number (with `default`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from dataclasses import dataclass

from blurbflow.grid import (  # noqa: F401 (re-exported)
    AXIS_TAGS,
    GRID_KEYS,
    SELECTED,
    SELECTED_KEYS,
    check_hparams_from,
    check_sources_run,
    grid_points,
    hparams_name,
    hparams_sources,
    selection_file,
)
from blurbflow.init_from import init_from_options, link_cells
from blurbflow.models.prefetch import model_settings
from blurbflow.schema import check_keys, check_values  # noqa: F401 (re-exported)
from blurbflow.studies import (  # noqa: F401
    check_study_selection,
    evaluation_options,
    runs_on,
    study_seeds,
    task_runs,
)
from blurbflow.tasks import get_task
from blurbflow.tasks.crossval import PARENT
from blurbflow.validate import ConfigError, check_names, grid_collision  # noqa: F401
from blurbflow.validate import did_you_mean as _did_you_mean

# Gu et al. 2021 fine-tuning defaults: the original BERT optimizer (Adam without bias
# correction, epsilon 1e-6); the config's `defaults` overrides them.
GU_DEFAULTS = {
    "epochs": 3,
    "lr": 5e-5,
    "batch_size": 32,
    "warmup_ratio": 0.1,
    "weight_decay": 0.01,
    "dropout": 0.1,
    "adam_bias_correction": False,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-6,
    "max_grad_norm": 1.0,
    "freeze_lower": 0,
    "layerwise_lr_decay": None,
    "reinit_top": 0,
    "remove_top": 0,
    "select": "best_dev",
    "eval_batch_size": 64,
    "train_on": "train",
    "train_subsample": None,
    "subsample_seed": 0,
    "segment_ids": "pair",
    "tagging": "BIO",
    "head": "linear",
    "re_input": "dummify",
    "re_pooling": "cls",
    "batching": "bucketed",
    "precision": "bf16",  # train/batching.py, train/device.py
}
# Recipe keys that change no computation: editing them re-runs nothing (not in a cell's options).
COSMETIC_KEYS = ("description",)
INPUT_VALUES = {
    "tagging": ("BIO", "BIOUL", "IO"),
    "re_input": ("dummify", "markers", "original"),
    "segment_ids": ("pair", "single"),
}


@dataclass(frozen=True)
class Cell:
    model: str
    task: str
    recipe: str
    hparams: str
    seed: int
    options: dict

    @property
    def path(self) -> str:
        return (
            f"results/cells/{self.model}/{self.task}/{self.recipe}/{self.hparams}/seed{self.seed}"
        )


@dataclass(frozen=True)
class CellJob:
    """One Snakemake job: the seeds of one (model, task, recipe, hparams), run one after the
    other in one process. Its options are the cells' options without the seed."""

    model: str
    task: str
    recipe: str
    hparams: str
    options: dict
    seeds: tuple[int, ...]

    @property
    def path(self) -> str:
        return f"results/cells/{self.model}/{self.task}/{self.recipe}/{self.hparams}"


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
            {k: v for k, v in cell.options.items() if k != "seed"},
            tuple(sorted(seeds[key])),
        )
        for key, cell in first.items()
    }


def resolve_recipe(config: dict, name: str, _seen: tuple = ()) -> dict:
    """A recipe's own keys over the recipe it extends, over `defaults`, over Gu's defaults."""
    recipes = config.get("recipes", {})
    if name not in recipes:
        raise ConfigError(
            f"recipes: unknown recipe {name!r}{_did_you_mean(name, recipes)}; "
            f"define it under `recipes:` or use one of {sorted(recipes)}"
        )
    if name in _seen:
        raise ConfigError(f"recipes.{name}.extends: circular chain {' -> '.join(_seen + (name,))}")
    recipe = dict(recipes[name] or {})
    parent = recipe.pop("extends", None)
    base = (
        resolve_recipe(config, parent, _seen + (name,))
        if parent
        else {**GU_DEFAULTS, **config.get("defaults", {})}
    )
    return {**base, **recipe}


def _epochs_for(epochs, task: str, where: str) -> int:
    if isinstance(epochs, dict):
        parent = PARENT.get(task, (task,))[0]  # a cross-validation fold: its task's entry
        for key in (task, parent):
            if key in epochs:
                return int(epochs[key])
        if "default" in epochs:
            return int(epochs["default"])
        raise ConfigError(f"{where}.epochs: no entry for task {task!r} and no `default`")
    return int(epochs)


def cell_options(
    config: dict, model: str, task: str, recipe: str, lr, batch_size, axes: dict | None = None
) -> dict:
    """Every option a cell's result depends on; they become the rule's params (rerun trigger).
    `axes`: this grid point's values of the technique hyperparameters the recipe lists."""
    resolved = resolve_recipe(config, recipe)
    spec = get_task(task, config)
    tasks_cfg = config.get("tasks") or {}
    task_cfg = tasks_cfg.get(task) or tasks_cfg.get(PARENT.get(task, (task,))[0]) or {}
    options = {k: v for k, v in resolved.items() if k not in ("lr", "batch_size", *COSMETIC_KEYS)}
    options.update(axes or {})
    options.update(
        model=model,
        model_source=config["models"][model].get("path") or config["models"][model]["hub_id"],
        task=task,
        recipe=recipe,
        lr=None if lr is None else float(lr),
        batch_size=None if batch_size is None else int(batch_size),
        hparams=SELECTED if lr is None else hparams_name(lr, batch_size, axes),
        epochs=_epochs_for(resolved["epochs"], task, f"recipes.{recipe}"),
        max_length=int(task_cfg.get("max_length", resolved.get("max_length") or spec.max_length)),
        code_version=str(config.get("code_version", "1")),
    )
    # revision, cased, add_prefix_space, trust_remote_code: only those the model's entry sets,
    # so cells of other models keep their params
    options.update(model_settings(model, config["models"][model]))
    if resolved.get("hparams_from"):
        # chosen by the search (blurbflow.results.selected); epochs: the searches' budget, an
        # upper bound for the job's resources until the selection sets it
        sources = hparams_sources(resolved)
        budgets = [
            _epochs_for(resolve_recipe(config, s)["epochs"], task, f"recipes.{s}") for s in sources
        ]
        options.update(dict.fromkeys(SELECTED_KEYS), epochs=max(budgets), hparams=SELECTED)
        path = selection_file(model, task, recipe)
        options.update(hparams_from=sources, selection_file=path)
    if resolved.get("init_from"):  # starts from another cell's weights (blurbflow.init_from)
        options["init_from"] = init_from_options(config, recipe, resolved, resolve_recipe)
    if options["train_on"] == "train+dev":
        # Nothing is held out to select on: the last epoch is the model (dev is still scored).
        options["select"] = "last"
        if options.get("patience"):
            raise ConfigError(
                f"recipes.{recipe}.patience: early stopping needs a held-out dev set, but the "
                "recipe trains on train+dev; remove `patience` or use `train_on: train`"
            )
    return options


def input_key(task: str, options: dict) -> str:
    """The tokenization cache key of a cell: its input length and the input options that apply
    to its task type, e.g. `L256-markers` (RE), `L512-BIOUL` (NER), `L512-single` (QA/STS),
    `L512` (HoC). Options that only change training (lr, head, pooling …) are not part of it, so
    changing them never re-tokenizes; `resources/tokenized/{model}/{task}/{key}` is the folder."""
    parts = [f"L{int(options['max_length'])}"]
    for name in get_task(task).kind.input_options:
        value = options.get(name, GU_DEFAULTS[name])
        if value not in INPUT_VALUES[name]:
            raise ConfigError(f"{name}: {value!r} is not one of {', '.join(INPUT_VALUES[name])}")
        parts.append(str(value))
    return "-".join(parts)


def parse_input_key(key: str) -> dict:
    """The options a key of `input_key` stands for (those it leaves out take their defaults)."""
    head, *rest = key.split("-")
    if not head.startswith("L") or not head[1:].isdigit():
        raise ValueError(f"input key {key!r}: expected L<max_length>[-<option value>…]")
    options = {"max_length": int(head[1:])}
    for value in rest:
        names = [name for name, values in INPUT_VALUES.items() if value in values]
        if not names or names[0] in options:
            raise ValueError(f"input key {key!r}: unknown or repeated part {value!r}")
        options[names[0]] = value
    return {**{name: GU_DEFAULTS[name] for name in INPUT_VALUES}, **options}


def expand_cells(config: dict, studies: list[str] | None = None) -> dict[str, Cell]:
    """All cells of the selected studies (all by default), keyed by their output folder."""
    check_names(config)
    check_study_selection(config)
    for name in config.get("recipes", {}):
        if resolve_recipe(config, name).get("hparams_from"):
            check_hparams_from(config, name, resolve_recipe)
    cells: dict[str, Cell] = {}
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
                for lr, bs, axes in points[:1] if tune else points:
                    options = cell_options(config, model, run, recipe, lr, bs, axes)
                    if tune:
                        options = evaluation_options(options, tune)
                    for seed in study_seeds(study, task):
                        cell = Cell(
                            model, run, recipe, options["hparams"], seed, {**options, "seed": seed}
                        )
                        previous = cells.get(cell.path)
                        if previous is not None and previous.options != cell.options:
                            raise grid_collision(
                                recipe, cell.hparams, previous.options, cell.options
                            )
                        cells[cell.path] = cell
    if studies is None:  # a subset may take its searches from studies left out
        check_sources_run(cells, config.get("studies", {}))
    # sources of `init_from` keep their weights (a subset: those it runs)
    return link_cells(cells, config.get("studies", {}), studies is None, _with_options)


def _with_options(cell: Cell, options: dict) -> Cell:
    return dataclasses.replace(cell, options=options)


def options_json(options: dict) -> str:
    return json.dumps(options, sort_keys=True, separators=(",", ":"))


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:12]
