"""What a study runs: its seeds per task, `recipe_scope`, and the checks of the study keys
that change what runs and what its table selects (`choose`, `reference_models`)."""

from __future__ import annotations

from blurbflow.errors import ConfigError
from blurbflow.options import CellOptions


def _seed_list(seeds) -> list[int]:
    return list(range(1, seeds + 1)) if isinstance(seeds, int) else [int(s) for s in seeds]


def _task_entry(seeds: dict, task: str):
    if "adaptive" in seeds:  # `seeds: {adaptive: {…}}`: every task of the study
        return seeds
    if task in seeds:
        return seeds[task]
    if "default" in seeds:
        return seeds["default"]
    raise ConfigError(f"seeds: no entry for task {task!r} and no `default`")


def study_seeds(study: dict, task: str | None = None) -> list[int]:
    """The seeds of a study: a count (1..N), a list, or a mapping task → count or list with a
    `default` (Gu et al.: `{default: 5, biosses: 10, pubmedqa: 10, bioasq: 10}`). With a mapping
    and no `task`, the union over the study's tasks. Adaptive seeds: every seed a cell may reach,
    1..max (how many it has is decided by the rounds, blurbflow.results.rounds)."""
    seeds = study["seeds"]
    if not isinstance(seeds, dict):
        return _seed_list(seeds)
    if task is None:
        return sorted({s for t in study.get("tasks", []) for s in study_seeds(study, t)})
    spec = adaptive_spec(study, task)
    if spec is not None:
        return list(range(1, spec["max"] + 1))
    return _seed_list(_task_entry(seeds, task))


def adaptive_spec(study: dict, task: str) -> dict | None:
    """The task's `adaptive` seed plan of a study (`seeds: {adaptive: {…}}`, or per task
    `{default: 5, biosses: {adaptive: {…}}}`); None for fixed seeds."""
    seeds = study.get("seeds")
    if not isinstance(seeds, dict):
        return None
    entry = _task_entry(seeds, task)
    return entry["adaptive"] if isinstance(entry, dict) and "adaptive" in entry else None


def adaptive_counts(spec: dict) -> tuple[int, ...]:
    """Seeds per cell at each round: start, start + step, …, max (SeedPlan.seeds)."""
    return (*range(spec["start"], spec["max"], spec["step"]), spec["max"])


ADAPTIVE_KEYS = ("start", "step", "max", "delta")  # the rest are the schema's to check
ADAPTIVE_EXCLUDES = ("choose", "cross_validation", "reference_models")


def check_adaptive(config: dict, name: str, study: dict) -> None:
    """`studies.{name}.seeds…adaptive`: whole start ≥ 2, step ≥ 1, max ≥ start, delta > 0, and a
    study that compares something (a baseline among its recipes, or two models), whose cells
    are its own (blurbflow.config checks that no other study runs them)."""
    specs = {}
    for task in study.get("tasks", []):
        spec = adaptive_spec(study, task)
        if spec is not None:
            where = f"studies.{name}.seeds" + ("" if "adaptive" in study["seeds"] else f".{task}")
            specs[f"{where}.adaptive"] = spec
    if not specs:
        return
    if "adaptive" in study["seeds"] and len(study["seeds"]) > 1:
        raise ConfigError(f"studies.{name}.seeds: `adaptive` for every task, or per task; not both")
    for where, spec in specs.items():
        if not isinstance(spec, dict):
            raise ConfigError(f"{where}: give {{start: 3, step: 2, max: 10, delta: 1.0}}")
        for key in ADAPTIVE_KEYS:
            value = spec.get(key)
            whole = isinstance(value, int) and not isinstance(value, bool)
            if key != "delta" and not whole:
                raise ConfigError(f"{where}.{key}: {value!r} is not a whole number")
        if spec["start"] < 2:
            raise ConfigError(f"{where}.start: {spec['start']}; a variance needs at least 2 seeds")
        if spec["step"] < 1:
            raise ConfigError(f"{where}.step: {spec['step']}; at least 1 seed a round")
        if spec["start"] > spec["max"]:
            raise ConfigError(f"{where}.start: {spec['start']} is above max {spec['max']}")
        delta = spec.get("delta")
        if isinstance(delta, bool) or not isinstance(delta, int | float) or not delta > 0:
            raise ConfigError(f"{where}.delta: {delta!r}; the equivalence margin must be > 0")
        if delta == float("inf"):
            raise ConfigError(f"{where}.delta: {delta!r} is not a finite number")
    where = next(iter(specs))
    baseline = study.get("baseline") in study.get("recipes", []) and len(study["recipes"]) > 1
    if not baseline and len(study.get("models", [])) < 2:
        raise ConfigError(
            f"{where}: the study compares nothing (adaptive seeds run until its comparisons are "
            "decided); give it a `baseline` among two or more recipes, or two models"
        )
    for key in ADAPTIVE_EXCLUDES:
        if study.get(key):
            raise ConfigError(f"{where}: not with `{key}` (its choice moves as seeds are added)")
    for recipe in study.get("recipes", []):
        for key in ("hparams_from", "init_from"):
            if _recipe_key(config, recipe, key):
                raise ConfigError(
                    f"{where}: recipe {recipe!r} has `{key}`; adaptive seeds need recipes that "
                    "train on their own"
                )


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
        check_cross_validation(config, name, study)
        check_adaptive(config, name, study)
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
        # a recipe may be a candidate of several groups (each chooses on its own); a group
        # that repeats another's recipes would show the same column twice
        grouped: dict[str, str] = {}
        seen: dict[frozenset, str] = {}
        for label, members in (study.get("choose") or {}).items():
            if label in config.get("recipes", {}) or label in recipes:
                raise ConfigError(f"{where}.choose.{label}: the label names a recipe; rename it")
            if len(members) < 2:
                raise ConfigError(
                    f"{where}.choose.{label}: list at least two recipes to choose from"
                )
            if frozenset(members) in seen:
                raise ConfigError(
                    f"{where}.choose.{label}: the same recipes as `{seen[frozenset(members)]}`"
                )
            seen[frozenset(members)] = label
            for member in members:
                if member not in recipes:
                    raise ConfigError(
                        f"{where}.choose.{label}: {member!r} is not one of the study's recipes"
                    )
                grouped.setdefault(member, label)
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


# --- cross-validation (Bio-LM: GAD and EU-ADR over Lee et al.'s 10 folds) ----------------------

CV_KEYS = {"tasks", "tune_fold", "statistic"}
FOLD_STATISTICS = ("median", "mean")


def cross_validation(study: dict) -> dict:
    """The study's `cross_validation` with its defaults (tune fold 1, median over folds);
    `{}` when the study has none."""
    section = study.get("cross_validation")
    if not section:
        return {}
    return {"tune_fold": 1, "statistic": "median", **section}


def task_runs(study: dict, task: str) -> list[tuple[str, str | None]]:
    """(task that runs, tune task or None) for one of the study's tasks: the task itself, or
    with cross-validation its tune fold (a search: hyperparameters and epochs chosen on its
    dev) and every other fold (trained on train+dev with what the tune fold chose)."""
    from blurbflow.tasks.crossval import fold_tasks

    cv = cross_validation(study)
    if task not in cv.get("tasks", []):
        return [(task, None)]
    folds = fold_tasks(task)
    tune = folds[int(cv["tune_fold"]) - 1]
    return [(tune, None), *((fold, tune) for fold in folds if fold != tune)]


def evaluation_options(options: CellOptions, tune_task: str) -> CellOptions:
    """An evaluation fold's options from those of its recipe on that fold: hyperparameters and
    epochs from the tune fold's search (`hparams_from` the same recipe, `hparams_task`), trained
    on the fold's whole train file, the last epoch kept (no dev held out, no early stopping)."""
    from blurbflow.grid import SELECTED, SELECTED_KEYS, selection_file

    recipe, model = options.recipe, options.model
    evaluation = options.replace(
        **{**dict.fromkeys(SELECTED_KEYS), "epochs": options.epochs},
        hparams=SELECTED,
        hparams_from=[recipe],
        hparams_task=tune_task,
        selection_file=selection_file(model, tune_task, recipe),
        train_on="train+dev",
        select="last",
    )
    # nothing to stop on; evaluate per epoch
    if evaluation.patience:
        evaluation = evaluation.replace(patience=None)
    if evaluation.eval_every_steps:
        evaluation = evaluation.replace(eval_every_steps=None)
    return evaluation


def chosen_on_reference(study: dict, model: str, task: str, recipe: str, points: int) -> bool:
    """Whether the model trains only the grid point the study's `reference_models` chose: a
    model not among them, a recipe with a grid, and some reference model that runs it."""
    reference = study.get("reference_models") or []
    return (
        points > 1
        and bool(reference)
        and model not in reference
        and any(runs_on(study, recipe, r, task) for r in reference)
    )


def reference_options(options: CellOptions, reference: list[str]) -> CellOptions:
    """A model's options at the point its study's reference models choose on dev (the grid
    keys set by that selection, blurbflow.grid.with_selection), in the folder `on-…`."""
    from blurbflow.grid import GRID_KEYS, reference_file, reference_name

    return options.replace(
        **dict.fromkeys(GRID_KEYS),
        hparams=reference_name(reference),
        hparams_models=tuple(reference),
        selection_file=reference_file(reference, options.task, options.recipe),
    )


def _recipe_key(config: dict, recipe: str, key: str):
    """A recipe's `key` through its `extends` chain, then `defaults` (None when unset)."""
    recipes, seen = config.get("recipes") or {}, set()
    while recipe in recipes and recipe not in seen:
        seen.add(recipe)
        entry = recipes[recipe] or {}
        if key in entry:
            return entry[key]
        recipe = entry.get("extends")
    return (config.get("defaults") or {}).get(key)


def check_cross_validation(config: dict, name: str, study: dict) -> None:
    """`studies.{name}.cross_validation`: tasks of the study that publish folds, a tune fold
    among them, a fold statistic, and recipes that select on the tune fold's dev."""
    from blurbflow.tasks.crossval import FOLD_TASKS, fold_tasks

    section = study.get("cross_validation")
    if section is None:
        return
    where = f"studies.{name}.cross_validation"
    if not isinstance(section, dict) or not section.get("tasks"):
        raise ConfigError(f"{where}: give `{{tasks: [gad], tune_fold: 1, statistic: median}}`")
    if unknown := set(section) - CV_KEYS:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; use tasks, tune_fold, statistic"
        )
    for task in section["tasks"]:
        if task not in study.get("tasks", []):
            raise ConfigError(f"{where}.tasks: {task!r} is not one of the study's tasks")
        if not fold_tasks(task):
            raise ConfigError(
                f"{where}.tasks: {task!r} has no published folds; cross-validated tasks: "
                f"{', '.join(FOLD_TASKS)}"
            )
        tune = section.get("tune_fold", 1)
        count = len(fold_tasks(task))
        if isinstance(tune, bool) or not isinstance(tune, int) or not 1 <= tune <= count:
            raise ConfigError(f"{where}.tune_fold: {tune!r} is not a fold of {task} (1..{count})")
    if section.get("statistic", "median") not in FOLD_STATISTICS:
        raise ConfigError(
            f"{where}.statistic: {section['statistic']!r} is not one of "
            f"{', '.join(FOLD_STATISTICS)}"
        )
    for recipe in study.get("recipes", []):
        if _recipe_key(config, recipe, "hparams_from") or (
            _recipe_key(config, recipe, "train_on") == "train+dev"
        ):
            raise ConfigError(
                f"{where}: recipe {recipe!r} takes `hparams_from` or trains on train+dev; a "
                "cross-validated recipe selects on the tune fold's dev itself (use a search recipe)"
            )
