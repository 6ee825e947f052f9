"""Config validation that runs before any job: names safe as folder names and shell words,
references that exist, finite numbers, bounded sizes, and paths the workflow may write to.

Every error is a `ConfigError` naming the key path and the fix. `check_config` is the whole
check (workflow/rules/validate.smk); `check_names` is its schema-free part, also run by
`blurbflow.config.expand_cells`.
"""

from __future__ import annotations

import math
import re
from pathlib import PurePosixPath

from blurbflow.config.grid import GRID_KEYS
from blurbflow.config.recipes import resolve_recipe
from blurbflow.config.schema import check_keys, check_values
from blurbflow.models.prefetch import local_model_problem
from blurbflow.options import CellOptions
from blurbflow.options.engine import Settings as EngineSettings
from blurbflow.tasks.custom import check_section
from blurbflow.tasks.registry import BUILTIN, all_tasks
from blurbflow.tasks.types import check_metric_recorded
from blurbflow.util import paths
from blurbflow.util.errors import ConfigError, did_you_mean

# Model, task, recipe and study names become folders and command-line words: letters, digits,
# `.`, `_`, `-`, no leading dot (never `.`/`..`/hidden), at most 64 characters.
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
NAME_RULE = (
    "letters, digits, '.', '_' and '-' only, starting with a letter or digit, at most 64 characters"
)
# Hub ids as huggingface_hub accepts them (`org/name`), and git branch/tag/commit names.
HUB_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?"
REVISION_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._/-]{0,254}"
# Sizes beyond these are typos (`seeds: 100000000`); the paper studies stay far below them.
MAX_SEEDS = 1_000  # seeds per study and task
MAX_SEED = 2**31 - 1  # a seed value
MAX_GRID = 100  # hyperparameter grid points per recipe
MAX_CELLS = 200_000  # cells of the whole config (config.yaml: 39,105)
BUILT_MODELS = paths.BUILT_MODELS  # where `build:` models are built (rule build_demo_model)


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value) -> list:
    return value if isinstance(value, list) else []


def check_name(name, where: str) -> None:
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
        raise ConfigError(
            f"{where}: the name {name!r} is not allowed; names become folders and command "
            f"arguments, so use {NAME_RULE} (pattern {NAME_PATTERN}), e.g. 'tinn-llrd-0.8'"
        )


def check_safe_names(config: dict) -> None:
    """Every model, recipe, study and per-task key matches NAME_PATTERN."""
    for section in ("models", "recipes", "studies", "tasks"):
        for name in _dict(config.get(section)):
            check_name(name, section)


def check_finite(value, where: str = "") -> None:
    """NaN passes every bound of the schema (all comparisons are false): reject it, and ±inf."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(
            f"{where or '(top level)'}: {value} is not a finite number; write a number"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            check_finite(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_finite(item, f"{where}[{index}]")


def _known(item, known, where: str, kind: str, extra: str = "") -> None:
    if item not in known:
        raise ConfigError(
            f"{where}: unknown {kind} {item!r}{did_you_mean(item, known)}; "
            f"known: {', '.join(sorted(map(str, known)))}{extra}"
        )


def _tasks(config: dict, files: bool = False) -> dict:
    """Every task the config may name: BLURB's and its own (`tasks:` entries with a `type`)."""
    check_section(config.get("tasks"), BUILTIN, files)
    return all_tasks(config)


def _check_seeds(seeds, where: str) -> int:
    """The number of seeds of one task, bounded (adaptive: the schema bounds `max`)."""
    if isinstance(seeds, bool) or not isinstance(seeds, int | list):
        return 0
    count = seeds if isinstance(seeds, int) else len(seeds)
    if count > MAX_SEEDS:
        raise ConfigError(
            f"{where}: {count} seeds is more than the limit of {MAX_SEEDS} per task; "
            f"use a count ≤ {MAX_SEEDS} or a shorter list"
        )
    for seed in seeds if isinstance(seeds, list) else ():
        if isinstance(seed, int) and not 0 <= seed <= MAX_SEED:
            raise ConfigError(f"{where}: seed {seed} is outside 0..{MAX_SEED}")
    return count


def _check_studies(config: dict) -> dict[str, dict[str, int]]:
    """References of every study; returns study → task → number of seeds."""
    models, recipes = _dict(config.get("models")), _dict(config.get("recipes"))
    counts: dict[str, dict[str, int]] = {}
    for name, study in _dict(config.get("studies")).items():
        study = _dict(study)
        for key, known in (("models", models), ("tasks", _tasks(config)), ("recipes", recipes)):
            for item in _list(study.get(key)):
                _known(item, known, f"studies.{name}.{key}", key[:-1])
        tasks = _list(study.get("tasks"))
        seeds = study.get("seeds")
        if isinstance(seeds, dict) and "adaptive" not in seeds:  # adaptive: every task
            for key in seeds:
                if key != "default" and key not in tasks:
                    raise ConfigError(
                        f"studies.{name}.seeds.{key}: not one of the study's tasks "
                        f"({', '.join(tasks)}) nor `default`{did_you_mean(key, tasks)}"
                    )
            for task in tasks:
                if task not in seeds and "default" not in seeds:
                    raise ConfigError(
                        f"studies.{name}.seeds: no entry for task {task!r}; add it or `default`"
                    )
            counts[name] = {
                task: _check_seeds(seeds.get(task, seeds.get("default")), f"studies.{name}.seeds")
                for task in tasks
            }
        else:
            count = _check_seeds(seeds, f"studies.{name}.seeds")
            counts[name] = {task: count for task in tasks}
        for task in _list(study.get("tasks")) if study.get("metric") else ():
            check_metric_recorded(
                f"studies.{name}.metric", study["metric"], all_tasks(config)[task]
            )
        baseline = study.get("baseline")
        if baseline is not None and baseline not in _list(study.get("recipes")):
            raise ConfigError(
                f"studies.{name}.baseline: {baseline!r} is not one of the study's recipes"
                f"{did_you_mean(baseline, _list(study.get('recipes')))}"
            )
    return counts


def _grid_size(recipe: dict) -> tuple[int, list[str]]:
    lists = [key for key in GRID_KEYS if isinstance(recipe.get(key), list)]
    return math.prod(len(recipe[key]) for key in lists), lists


def _check_recipes(config: dict) -> dict[str, int]:
    """Per-task epochs keys are known tasks, every recipe resolves; returns recipe → grid size."""
    sections = {"defaults": _dict(config.get("defaults"))}
    sections.update({f"recipes.{n}": _dict(r) for n, r in _dict(config.get("recipes")).items()})
    for where, options in sections.items():
        for task in _dict(options.get("epochs")):
            if task != "default":
                _known(task, _tasks(config), f"{where}.epochs.{task}", "task", " (or `default`)")
    grids = {}
    for name in _dict(config.get("recipes")):
        size, lists = _grid_size(resolve_recipe(config, name))
        if size > MAX_GRID:
            raise ConfigError(
                f"recipes.{name}: a grid of {size} hyperparameter points is more than the "
                f"limit of {MAX_GRID}; shorten its lists ({', '.join(lists)})"
            )
        grids[name] = size
    return grids


def _check_path(value, where: str, writes: bool) -> None:
    """No control characters, braces (Snakemake wildcards) or leading '-' (an option); a path
    the workflow writes to has no `..` part and is not the workflow folder itself."""
    if not isinstance(value, str):
        return
    if not value or value.startswith("-") or re.search(r"[\x00-\x1f\x7f{}]", value):
        raise ConfigError(
            f"{where}: {value!r} is not a usable path; it must be non-empty, not start with "
            "'-' and hold no control characters or braces"
        )
    if writes and (
        ".." in PurePosixPath(value).parts
        or PurePosixPath(value) in (PurePosixPath("."), PurePosixPath("/"))
    ):
        raise ConfigError(
            f"{where}: {value!r} leaves or replaces the workflow folder; the workflow writes "
            "there, so give a folder without '..' parts (an absolute path for a shared cache)"
        )


def _check_models(config: dict) -> None:
    for name, spec in _dict(config.get("models")).items():
        spec, where = _dict(spec), f"models.{name}"
        for task in _list(spec.get("corpus_tasks")):
            _known(task, _tasks(config), f"{where}.corpus_tasks", "task")
        hub_id, revision = spec.get("hub_id"), spec.get("revision")
        if isinstance(hub_id, str) and (
            not re.fullmatch(HUB_ID_PATTERN, hub_id) or ".." in hub_id or "--" in hub_id
        ):
            raise ConfigError(
                f"{where}.hub_id: {hub_id!r} is not a Hugging Face model id; write "
                "'org/name' (letters, digits, '.', '_', '-'), e.g. 'microsoft/BiomedNLP-"
                "BiomedBERT-base-uncased-abstract'"
            )
        if isinstance(revision, str) and (
            not re.fullmatch(REVISION_PATTERN, revision) or ".." in revision
        ):
            raise ConfigError(
                f"{where}.revision: {revision!r} is not a branch, tag or commit name; use "
                "letters, digits, '.', '_', '-' and '/'"
            )
        path = spec.get("path")
        _check_path(path, f"{where}.path", writes=bool(spec.get("build")))
        if spec.get("build") and isinstance(path, str):
            expected = f"{BUILT_MODELS}/{name}"
            if PurePosixPath(path) != PurePosixPath(expected):
                raise ConfigError(
                    f"{where}.path: {path!r}: a model with `build: {spec['build']}` is built "
                    f"into {expected}/ (the only folder the workflow builds and may replace); "
                    f"set `path: {expected}`"
                )


def _check_total(config: dict, counts: dict, grids: dict) -> None:
    total = 0
    for name, study in _dict(config.get("studies")).items():
        n_models, recipes = len(_list(study.get("models"))), _list(study.get("recipes"))
        points = sum(grids.get(recipe, 1) for recipe in recipes)
        total += n_models * points * sum(counts.get(name, {}).values())
    if total > MAX_CELLS:
        raise ConfigError(
            f"studies: {total:,} cells is more than the limit of {MAX_CELLS:,}; fewer seeds, "
            "grid points, models or tasks (or split the config into several)"
        )


def check_names(config: dict) -> None:
    """The schema-free checks: safe names, known references (studies, `extends`, per-task keys,
    `corpus_tasks`), finite numbers, bounded sizes and safe paths."""
    check_safe_names(config)
    check_finite(config)
    counts = _check_studies(config)
    _tasks(config)
    grids = _check_recipes(config)
    _check_models(config)
    _check_path(config.get("hf_cache"), "hf_cache", writes=True)
    _check_path(_dict(config.get("data")).get("bioasq_dir"), "data.bioasq_dir", writes=False)
    _check_path(config.get("mirror"), "mirror", writes=False)
    _check_total(config, counts, grids)


def check_local_models(config: dict) -> None:
    """A study's local (not built) model folder holds a model (config.json, weights, tokenizer)
    and the config's task files exist, before any job."""
    _tasks(config, files=True)
    used = {m for s in _dict(config.get("studies")).values() for m in _list(_dict(s).get("models"))}
    for name, spec in _dict(config.get("models")).items():
        path = _dict(spec).get("path")
        problem = name in used and path and not spec.get("build") and local_model_problem(path)
        if problem:
            raise ConfigError(f"models.{name}.path: {problem}")


def grid_collision(
    recipe: str, folder: str, first: CellOptions, second: CellOptions
) -> ConfigError:
    """Two grid points of `recipe` whose hparams folder names are the same."""
    one, two = first.to_dict(), second.to_dict()
    values = " vs ".join(
        ", ".join(
            f"{k}={opts.get(k)!r}" for k in sorted(set(one) | set(two)) if one.get(k) != two.get(k)
        )
        for opts in (one, two)
    )
    return ConfigError(
        f"recipes.{recipe}: two grid points ({values}) both go to the folder {folder!r}, so "
        "one would overwrite the other; make the values differ within 6 significant digits "
        "or drop one"
    )


def check_config(config: dict, schema: dict) -> None:
    """Everything, in the order that gives the clearest first error: unknown keys, unsafe
    names, non-finite numbers, the schema, the engine's choices, references and sizes,
    missing local models."""
    check_keys(config, schema)
    check_safe_names(config)
    check_finite(config)
    check_values(config, schema)
    EngineSettings.from_config(config.get("engine"))  # a backend or GPU type a typo away
    check_names(config)
    check_local_models(config)
