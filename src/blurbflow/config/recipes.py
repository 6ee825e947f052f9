"""Recipes are data: a recipe is the defaults (blurbflow.options, overridden by the config's
`defaults`) overlaid with the keys of the recipe it `extends`, then with its own. `epochs` may be
a number or a mapping task → number (with `default`)."""

from __future__ import annotations

from blurbflow.options import defaults
from blurbflow.tasks.crossval import PARENT
from blurbflow.util.errors import ConfigError, did_you_mean

# Recipe keys that change no computation: editing them re-runs nothing (not in a cell's options).
COSMETIC_KEYS = ("description",)


def resolve_recipe(config: dict, name: str, _seen: tuple = ()) -> dict:
    """A recipe's own keys over the recipe it extends, over `defaults`, over Gu's defaults."""
    recipes = config.get("recipes", {})
    if name not in recipes:
        raise ConfigError(
            f"recipes: unknown recipe {name!r}{did_you_mean(name, recipes)}; "
            f"define it under `recipes:` or use one of {sorted(recipes)}"
        )
    if name in _seen:
        raise ConfigError(f"recipes.{name}.extends: circular chain {' -> '.join(_seen + (name,))}")
    recipe = dict(recipes[name] or {})
    parent = recipe.pop("extends", None)
    base = (
        resolve_recipe(config, parent, _seen + (name,))
        if parent
        else {**defaults(), **config.get("defaults", {})}
    )
    return {**base, **recipe}


def epochs_for(epochs, task: str, where: str) -> int:
    """A recipe's epoch count for `task` (a cross-validation fold: its task's entry)."""
    if isinstance(epochs, dict):
        parent = PARENT.get(task, (task,))[0]
        for key in (task, parent):
            if key in epochs:
                return int(epochs[key])
        if "default" in epochs:
            return int(epochs["default"])
        raise ConfigError(f"{where}.epochs: no entry for task {task!r} and no `default`")
    return int(epochs)
