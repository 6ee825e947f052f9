"""Turn a validated config into cells: model × task × recipe × hparams × seed (DESIGN §2).

Recipes are data: a recipe is `defaults` overlaid with its own keys (and those of the recipe
it `extends`). `lr` and `batch_size` may be lists: their product is the hyperparameter grid.
`epochs` may be a number or a mapping task → number (with `default`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass

from blurbflow.tasks import TASKS

# Gu et al. 2021 fine-tuning defaults (DESIGN §6); the config's `defaults` overrides them.
GU_DEFAULTS = {
    "epochs": 3,
    "lr": 5e-5,
    "batch_size": 32,
    "warmup_ratio": 0.1,
    "weight_decay": 0.01,
    "dropout": 0.1,
    "adam_bias_correction": True,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-8,
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
}
GRID_KEYS = ("lr", "batch_size")
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


class ConfigError(ValueError):
    """A config problem, reported with the key path that is wrong and how to fix it."""


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


def hparams_name(lr: float, batch_size: int) -> str:
    return f"lr{lr:g}-bs{batch_size}"


def _did_you_mean(name: str, known) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


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


def cell_options(config: dict, model: str, task: str, recipe: str, lr, batch_size) -> dict:
    """Every option a cell's result depends on; they become the rule's params (rerun trigger)."""
    resolved = resolve_recipe(config, recipe)
    spec = TASKS[task]
    task_cfg = (config.get("tasks") or {}).get(task) or {}
    options = {k: v for k, v in resolved.items() if k not in GRID_KEYS}
    options.update(
        model=model,
        model_source=config["models"][model].get("path") or config["models"][model]["hub_id"],
        task=task,
        recipe=recipe,
        lr=float(lr),
        batch_size=int(batch_size),
        hparams=hparams_name(lr, batch_size),
        epochs=_epochs_for(resolved["epochs"], task, f"recipes.{recipe}"),
        max_length=int(task_cfg.get("max_length", resolved.get("max_length") or spec.max_length)),
        code_version=str(config.get("code_version", "1")),
    )
    if config["models"][model].get("trust_remote_code"):
        # Only when the config asks, per model (DESIGN §10); absent otherwise, so cells of
        # other models keep their params.
        options["trust_remote_code"] = True
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


def _schema_node(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def check_keys(config: dict, schema: dict, node: dict | None = None, where: str = "") -> None:
    """Name the first key the schema does not know, with the closest known key, before the
    schema's own (less readable) validation runs."""
    node = _schema_node(schema, schema if node is None else node)
    if not isinstance(config, dict) or node.get("type") not in ("object", ["object", "null"]):
        return
    known = node.get("properties", {})
    extra = node.get("additionalProperties", True)
    for key, value in config.items():
        path = f"{where}.{key}" if where else str(key)
        if key in known:
            check_keys(value, schema, known[key], path)
        elif isinstance(extra, dict):
            check_keys(value, schema, extra, path)
        elif extra is False:
            raise ConfigError(
                f"{path}: unknown key{_did_you_mean(str(key), known)}; "
                f"allowed here: {', '.join(sorted(known))}"
            )


def check_values(config: dict, schema: dict) -> None:
    """Name the first value the schema rejects by its key path, with what is expected (the
    schema's `description` where it has one), before Snakemake's `validate` runs."""
    import jsonschema
    from jsonschema.exceptions import best_match

    error = best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is None:
        return
    path = ".".join(map(str, error.absolute_path)) or "(top level)"
    node = error.parent.schema if error.parent is not None else error.schema
    expected = node.get("description") or error.schema.get("description")
    hint = f"; expected {expected}" if expected else ""
    raise ConfigError(f"{path}: {error.message}{hint}")


def check_names(config: dict) -> None:
    """Fail on any study entry naming an unknown model, task or recipe."""
    models, recipes = config.get("models", {}), config.get("recipes", {})
    for name, study in config.get("studies", {}).items():
        for key, known in (("models", models), ("tasks", TASKS), ("recipes", recipes)):
            for item in study.get(key, []):
                if item not in known:
                    hint = _did_you_mean(item, known)
                    raise ConfigError(
                        f"studies.{name}.{key}: unknown {key[:-1]} {item!r}{hint}; "
                        f"known: {', '.join(sorted(known))}"
                    )
        seeds = study.get("seeds")
        if isinstance(seeds, dict):
            for key in seeds:
                if key != "default" and key not in study.get("tasks", []):
                    raise ConfigError(
                        f"studies.{name}.seeds.{key}: not one of the study's tasks "
                        f"({', '.join(study.get('tasks', []))}) nor `default`"
                    )
            for task in study.get("tasks", []):
                if task not in seeds and "default" not in seeds:
                    raise ConfigError(
                        f"studies.{name}.seeds: no entry for task {task!r}; add it or `default`"
                    )
        baseline = study.get("baseline")
        if baseline is not None and baseline not in study.get("recipes", []):
            raise ConfigError(
                f"studies.{name}.baseline: {baseline!r} is not one of the study's recipes"
            )
    for name in recipes:
        resolve_recipe(config, name)
    for name in config.get("tasks") or {}:
        if name not in TASKS:
            raise ConfigError(f"tasks.{name}: unknown task{_did_you_mean(name, TASKS)}")


def expand_cells(config: dict, studies: list[str] | None = None) -> dict[str, Cell]:
    """All cells of the selected studies (all by default), keyed by their output folder."""
    check_names(config)
    cells: dict[str, Cell] = {}
    for name, study in config.get("studies", {}).items():
        if studies is not None and name not in studies:
            continue
        for model, task, recipe in itertools.product(
            study["models"], study["tasks"], study["recipes"]
        ):
            resolved = resolve_recipe(config, recipe)
            for lr, bs in itertools.product(
                _as_list(resolved["lr"]), _as_list(resolved["batch_size"])
            ):
                options = cell_options(config, model, task, recipe, lr, bs)
                for seed in study_seeds(study, task):
                    cell = Cell(
                        model, task, recipe, hparams_name(lr, bs), seed, {**options, "seed": seed}
                    )
                    cells[cell.path] = cell
    return cells


def options_json(options: dict) -> str:
    return json.dumps(options, sort_keys=True, separators=(",", ":"))


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:12]
