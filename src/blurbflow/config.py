"""Turn a validated config into cells: model × task × recipe × hparams × seed (DESIGN §2).

Recipes are data: a recipe is `defaults` overlaid with its own keys (and those of the recipe
it `extends`). `lr`, `batch_size` and the technique hyperparameters `reinit_top`,
`layerwise_lr_decay` and `freeze_lower` may be lists: their product is the hyperparameter grid,
chosen on dev. `epochs` may be a number or a mapping task → number (with `default`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass

from blurbflow.models.prefetch import model_settings
from blurbflow.schema import check_keys, check_values  # noqa: F401 (re-exported)
from blurbflow.tasks import TASKS
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
    "batching": "bucketed", "precision": "bf16",  # train/batching.py, train/device.py
}
GRID_KEYS = ("lr", "batch_size", "reinit_top", "layerwise_lr_decay", "freeze_lower")
# Recipe keys that change no computation: editing them re-runs nothing (not in a cell's options).
COSMETIC_KEYS = ("description",)
# How a technique axis shows in the hparams folder name, only when the recipe lists it: a recipe
# without lists keeps `lr{lr}-bs{bs}`, so existing results stay where they are.
AXIS_TAGS = {"reinit_top": "reinit", "layerwise_lr_decay": "llrd", "freeze_lower": "freeze"}
# The options that change the tokenized input, per task type (the tokenization cache key).
INPUT_OPTIONS = {
    "ner": ("tagging",),
    "pico": ("tagging",),
    "re": ("re_input",),
    "sts": ("segment_ids",),
    "qa": ("segment_ids",),
    "doccls": (),
}
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
    """Cells batched by everything but the seed, keyed by the job's folder (DESIGN §11: one job
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


def _axis_text(value) -> str:
    if value is None:
        return "off"
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def hparams_name(lr: float, batch_size: int, axes: dict | None = None) -> str:
    """`lr3e-05-bs16`, then `-reinit2`, `-llrd0.8`, `-freezehalf` for the technique axes the
    recipe lists (`axes`: name → this point's value)."""
    tags = "".join(f"-{AXIS_TAGS[k]}{_axis_text(v)}" for k, v in (axes or {}).items())
    return f"lr{lr:g}-bs{batch_size}{tags}"


def grid_points(resolved: dict) -> list[tuple[float, int, dict]]:
    """The recipe's grid: (lr, batch size, listed technique axes → value) per point."""
    listed = [k for k in AXIS_TAGS if isinstance(resolved.get(k), list | tuple)]
    points = []
    for lr, bs, *values in itertools.product(
        _as_list(resolved["lr"]),
        _as_list(resolved["batch_size"]),
        *(resolved[k] for k in listed),
    ):
        points.append((lr, bs, dict(zip(listed, values, strict=True))))
    return points


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


def _as_list(value) -> list:
    return list(value) if isinstance(value, list | tuple) else [value]


def _epochs_for(epochs, task: str, where: str) -> int:
    if isinstance(epochs, dict):
        if task in epochs:
            return int(epochs[task])
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
    spec = TASKS[task]
    task_cfg = (config.get("tasks") or {}).get(task) or {}
    options = {k: v for k, v in resolved.items() if k not in ("lr", "batch_size", *COSMETIC_KEYS)}
    options.update(axes or {})
    options.update(
        model=model,
        model_source=config["models"][model].get("path") or config["models"][model]["hub_id"],
        task=task,
        recipe=recipe,
        lr=float(lr),
        batch_size=int(batch_size),
        hparams=hparams_name(lr, batch_size, axes),
        epochs=_epochs_for(resolved["epochs"], task, f"recipes.{recipe}"),
        max_length=int(task_cfg.get("max_length", resolved.get("max_length") or spec.max_length)),
        code_version=str(config.get("code_version", "1")),
    )
    # revision, cased, add_prefix_space, trust_remote_code: only those the model's entry sets,
    # so cells of other models keep their params
    options.update(model_settings(model, config["models"][model]))
    if options["train_on"] == "train+dev":
        # Nothing is held out to select on: the last epoch is the model (dev is still scored).
        options["select"] = "last"
    return options


def input_key(task: str, options: dict) -> str:
    """The tokenization cache key of a cell: its input length and the input options that apply
    to its task type, e.g. `L256-markers` (RE), `L512-BIOUL` (NER), `L512-single` (QA/STS),
    `L512` (HoC). Options that only change training (lr, head, pooling …) are not part of it, so
    changing them never re-tokenizes; `resources/tokenized/{model}/{task}/{key}` is the folder."""
    parts = [f"L{int(options['max_length'])}"]
    for name in INPUT_OPTIONS[TASKS[task].type]:
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


def _seed_list(seeds) -> list[int]:
    return list(range(1, seeds + 1)) if isinstance(seeds, int) else [int(s) for s in seeds]


def study_seeds(study: dict, task: str | None = None) -> list[int]:
    """The seeds of a study: a count (1..N), a list, or a mapping task → count or list with a
    `default` (Gu et al.: `{default: 5, biosses: 10, pubmedqa: 10, bioasq: 10}`). With a mapping
    and no `task`, the union over the study's tasks."""
    seeds = study["seeds"]
    if not isinstance(seeds, dict):
        return _seed_list(seeds)
    if task is None:
        return sorted({s for t in study.get("tasks", []) for s in study_seeds(study, t)})
    if task in seeds:
        return _seed_list(seeds[task])
    if "default" in seeds:
        return _seed_list(seeds["default"])
    raise ConfigError(f"seeds: no entry for task {task!r} and no `default`")


def runs_on(study: dict, recipe: str, model: str, task: str) -> bool:
    """Whether the study runs `recipe` for `model` on `task`: `recipe_scope` limits a recipe to
    some of the study's tasks and/or models (Tinn: techniques searched on the small tasks only;
    reinit up to 3 layers on BASE models, up to 6 on LARGE)."""
    scope = (study.get("recipe_scope") or {}).get(recipe) or {}
    return task in scope.get("tasks", [task]) and model in scope.get("models", [model])


def check_study_selection(config: dict) -> None:
    """The study keys that change what runs and what a table selects: `recipe_scope`, `choose`
    (per model and task, the recipe of a group best on dev) and `reference_models`
    (hyperparameters chosen per task on those models, applied to all)."""
    for name, study in config.get("studies", {}).items():
        where, recipes = f"studies.{name}", study.get("recipes", [])
        for recipe, scope in (study.get("recipe_scope") or {}).items():
            if recipe not in recipes:
                raise ConfigError(f"{where}.recipe_scope.{recipe}: not one of the study's recipes")
            for key in ("tasks", "models"):
                for item in scope.get(key, []):
                    if item not in study.get(key, []):
                        raise ConfigError(
                            f"{where}.recipe_scope.{recipe}.{key}: {item!r} is not one of the "
                            f"study's {key}"
                        )
        grouped: dict[str, str] = {}
        for label, members in (study.get("choose") or {}).items():
            if label in config.get("recipes", {}) or label in recipes:
                raise ConfigError(f"{where}.choose.{label}: the label names a recipe; rename it")
            if len(members) < 2:
                raise ConfigError(
                    f"{where}.choose.{label}: list at least two recipes to choose from"
                )
            for member in members:
                if member not in recipes:
                    raise ConfigError(
                        f"{where}.choose.{label}: {member!r} is not one of the study's recipes"
                    )
                if member in grouped:
                    raise ConfigError(
                        f"{where}.choose: {member!r} is in both {grouped[member]!r} and {label!r}"
                    )
                grouped[member] = label
        if study.get("baseline") in grouped:
            raise ConfigError(
                f"{where}.baseline: {study['baseline']!r} is chosen among in "
                f"`choose.{grouped[study['baseline']]}`; the baseline must be a recipe of its own"
            )
        for model in study.get("reference_models") or []:
            if model not in study.get("models", []):
                raise ConfigError(
                    f"{where}.reference_models: {model!r} is not one of the study's models"
                )


def expand_cells(config: dict, studies: list[str] | None = None) -> dict[str, Cell]:
    """All cells of the selected studies (all by default), keyed by their output folder."""
    check_names(config)
    check_study_selection(config)
    cells: dict[str, Cell] = {}
    for name, study in config.get("studies", {}).items():
        if studies is not None and name not in studies:
            continue
        for model, task, recipe in itertools.product(
            study["models"], study["tasks"], study["recipes"]
        ):
            if not runs_on(study, recipe, model, task):
                continue
            for lr, bs, axes in grid_points(resolve_recipe(config, recipe)):
                options = cell_options(config, model, task, recipe, lr, bs, axes)
                for seed in study_seeds(study, task):
                    cell = Cell(
                        model, task, recipe, options["hparams"], seed, {**options, "seed": seed}
                    )
                    previous = cells.get(cell.path)
                    if previous is not None and previous.options != cell.options:
                        raise grid_collision(recipe, cell.hparams, previous.options, cell.options)
                    cells[cell.path] = cell
    return cells


def options_json(options: dict) -> str:
    return json.dumps(options, sort_keys=True, separators=(",", ":"))


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:12]
