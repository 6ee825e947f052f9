"""The config side of exporting and publishing models, plain Python (read while Snakemake reads
the workflow, so no pandas): a study's `export_models` and the config's `publish` section, their
checks (each error names its key path and the fix), and the Hugging Face repository id of each
exported folder (docs/models.md)."""

from __future__ import annotations

import re
import string

from blurbflow.config.recipes import resolve_recipe
from blurbflow.config.study_plan import cross_validation
from blurbflow.tasks import get_task
from blurbflow.util.errors import ConfigError

SELECTIONS = ("best_seed", "all_seeds")
NAME_FIELDS = ("study", "model", "task", "recipe", "seed")
DEFAULT_NAME = "{model}-{task}-{recipe}"
# The hub's rule for a repository name: letters, digits, '-', '_', '.', no '--' or '..', not
# starting or ending with '-' or '.', at most 96 characters.
REPO_NAME = re.compile(r"^(?!.*(--|\.\.))[A-Za-z0-9_](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?$")


def export_plan(study: dict) -> dict | None:
    """The study's `export_models` as {select, citation}; None when it exports nothing."""
    value = study.get("export_models")
    if not value:
        return None
    if isinstance(value, str):
        value = {"select": value}
    return {"select": value.get("select", "best_seed"), "citation": value.get("citation")}


def exporting_studies(config: dict) -> list[str]:
    return [name for name, study in config["studies"].items() if export_plan(study)]


def run_recipes(study: dict) -> list[str]:
    """The recipes whose cells a study's table entries are: its recipes and every `choose`
    candidate (a `hparams_from` recipe's entries are its own final cells, not the search's)."""
    members = [r for group in (study.get("choose") or {}).values() for r in group]
    return list(dict.fromkeys([*study["recipes"], *members]))


def custom_head(task: str, options: dict) -> str | None:
    """Why cells of `task` with these recipe options have blurbflow's own head, which has no
    `save_pretrained` and no transformers class (None: transformers' own model)."""
    spec = get_task(task)
    if spec.kind.target == "span":
        return "extractive QA's span head"
    if options.get("head", "linear") != "linear":
        return f"head {options['head']!r}"
    if spec.kind.inputs == "entities" and options.get("re_pooling", "cls") != "cls":
        return f"re_pooling {options['re_pooling']!r}"
    return None


def check_export(config: dict) -> None:
    """Every exporting study's entries are cells that keep their model (`keep_model: true` on
    their recipe) and are one model per seed (no cross-validated task: its entry is a
    statistic over folds)."""
    for name in exporting_studies(config):
        study, where = config["studies"][name], f"studies.{name}.export_models"
        plan = export_plan(study)
        if plan["select"] not in SELECTIONS:
            raise ConfigError(f"{where}.select: {plan['select']!r}; one of {', '.join(SELECTIONS)}")
        folded = cross_validation(study).get("tasks", [])
        if folded:
            raise ConfigError(
                f"{where}: the cross-validated tasks {', '.join(folded)} have no one model per "
                "seed (their entry is a statistic over folds); export from a study without them"
            )
        keeping = [r for r in run_recipes(study) if not resolve_recipe(config, r).get("keep_model")]
        if keeping:
            raise ConfigError(
                f"{where}: recipe(s) {', '.join(keeping)} do not keep their models; set "
                "`keep_model: true` on them (or on recipes extending them, used by this study) — "
                "it is a cell option, so their cells train again, each seed keeping its folder"
            )
        for recipe in run_recipes(study):
            for task in study["tasks"]:
                why = custom_head(task, resolve_recipe(config, recipe))
                if why:
                    raise ConfigError(
                        f"{where}: recipe {recipe!r} on {task} trains blurbflow's own head "
                        f"({why}), which cannot be kept as a transformers model; export from "
                        "recipes with the linear head ([CLS] pooling for relations)"
                    )
    check_publish(config)


def publish_settings(config: dict) -> dict | None:
    """The `publish` section with its defaults; None when the config has none."""
    section = config.get("publish")
    if not section:
        return None
    settings = {
        "name": DEFAULT_NAME,
        "private": True,
        "dry_run": False,
        "studies": exporting_studies(config),
        **section,
    }
    # Snakemake's `--config 'publish={dry_run: true}'` hands nested values over as text
    for flag in ("private", "dry_run"):
        settings[flag] = settings[flag] in (True, "true")
    return settings


def repo_id(settings: dict, **fields) -> str:
    """`repo_prefix` + `name` filled in with the entry's study, model, task, recipe (and seed,
    when every seed is exported: `-seed{N}` is appended unless the name has `{seed}`)."""
    name = settings["name"]
    if fields.get("seed") is not None and "{seed}" not in name:
        name += "-seed{seed}"
    return settings["repo_prefix"] + name.format(**{f: fields.get(f) for f in NAME_FIELDS})


def check_publish(config: dict) -> None:
    settings = publish_settings(config)
    if settings is None:
        return
    prefix = str(settings.get("repo_prefix") or "")
    owner, _, _ = prefix.partition("/")
    if prefix.count("/") != 1 or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", owner):
        raise ConfigError(
            f"publish.repo_prefix: {prefix!r}; write `your-org/` or `your-org/name-` (the "
            "owner, one '/', then the start of each repository's name)"
        )
    fields = [f for _, f, _, _ in string.Formatter().parse(settings["name"]) if f is not None]
    unknown = [f for f in fields if f not in NAME_FIELDS]
    if unknown:
        raise ConfigError(
            f"publish.name: unknown field {{{unknown[0]}}}; use {', '.join(NAME_FIELDS)}"
        )
    seen: dict[str, str] = {}
    for name in settings["studies"]:
        study = (config["studies"] or {}).get(name)
        if study is None or not export_plan(study):
            raise ConfigError(
                f"publish.studies: {name!r} is not a study with `export_models`; one of "
                f"{', '.join(exporting_studies(config)) or '(none)'}"
            )
        recipes = [*study["recipes"], *(study.get("choose") or {})]
        seed = 1 if export_plan(study)["select"] == "all_seeds" else None
        for model in study["models"]:
            for task in study["tasks"]:
                for recipe in dict.fromkeys(recipes):
                    fields = dict(study=name, model=model, task=task, recipe=recipe, seed=seed)
                    repo = repo_id(settings, **fields)
                    _check_repo(repo, seen.get(repo), f"{name}: {model} on {task}, {recipe}")
                    seen[repo] = f"{name}: {model} on {task}, {recipe}"


def _check_repo(repo: str, other: str | None, what: str) -> None:
    name = repo.split("/", 1)[1]
    if not REPO_NAME.match(name):
        raise ConfigError(
            f"publish.name: the repository name {name!r} ({what}) is not one the hub accepts "
            "(letters, digits, '-', '_', '.', no '--' or '..', at most 96 characters); "
            "shorten `name` or the names it uses"
        )
    if other is not None:
        raise ConfigError(
            f"publish.name: {repo} would hold both {other} and {what}; put fields that tell "
            "them apart into `name` (e.g. {study})"
        )
