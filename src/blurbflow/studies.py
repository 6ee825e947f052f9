"""What a study runs: its seeds per task, `recipe_scope`, and the checks of the study keys
that change what runs and what its table selects (`choose`, `reference_models`)."""

from __future__ import annotations

from blurbflow.validate import ConfigError


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
