"""The published values a study's numbers are set beside (results/reproduction.py): the papers'
transcribed tables (blurbflow.published, by study name) and a study's own `published:` block in
the config, which wins entry by entry (docs/results.md "Reproduction").

A config's block, in the study's own table layout:

    published:
      source: "Smith et al. 2024, Table 3"     # shown beside the numbers
      decimals: 2                              # printed precision (default: as the values show)
      values:
        <row>:                                 # the row dimension's value (`blurb`: BLURB row)
          <column>: <value>                    # column dimensions' values joined by " / "

A value is a number or `not printed`; `{<task>: <value>}` in its place names the task (needed
by nobody: the row or column gives it, or the study has one task; it must be that task). A table
without column dimensions has one level, `<row>: <value>`. The BLURB aggregate is the row
`blurb` (tasks as rows) or `blurb` in the task's place of a column key (tasks among the
columns). An entry the study's table does not show (a typo, a renamed recipe, a model or task
the study does not list, `blurb` in a one-task table) is a ConfigError naming its key path, the
unknown name and the names the table has, raised while the workflow is read.

Plain Python, no pandas: workflow/rules/validate.smk checks the block while Snakemake reads the
workflow."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Mapping

from blurbflow import published as papers
from blurbflow.util.errors import ConfigError, did_you_mean
from blurbflow.results.layout import DIMS, shown_study, study_layout
from blurbflow.tasks.registry import all_tasks

BLURB = papers.BLURB
NOT_PRINTED = papers.NOT_PRINTED
Key = tuple[str, str, str]  # (row key, column key, task) as blurbflow.published keys entries


def entry_keys(study: dict) -> list[Key]:
    """(row key, column key, task) of every entry the study's table shows, rows by columns in
    the study's order, then the BLURB row (tasks as rows) or columns (tasks among the columns)
    when the table has several tasks."""
    study = shown_study(study)
    rows, columns = study_layout(study)
    order = {dim: [str(v) for v in study[f"{dim}s"]] for dim in DIMS}
    keys = []
    for row in order[rows]:
        for column in itertools.product(*(order[d] for d in columns)):
            at = {rows: row, **dict(zip(columns, column, strict=True))}
            keys.append((row, papers.column_key(column), at.get("task", order["task"][0])))
    if len(order["task"]) > 1 and "task" in (rows, *columns):
        blurb_order = {**order, "task": [BLURB]}
        for row in [BLURB] if rows == "task" else order[rows]:
            for column in itertools.product(*(blurb_order[d] for d in columns)):
                keys.append((row, papers.column_key(column), BLURB))
    return keys


def _leaf(leaf, task: str, where: str):
    """The number or None (`not printed`) of one config value."""
    if isinstance(leaf, Mapping):
        if list(leaf) != [task]:
            raise ConfigError(f"{where}: a mapping names this entry's task {task!r} alone")
        leaf, where = leaf[task], f"{where}.{task}"
    if leaf == NOT_PRINTED:
        return None
    if isinstance(leaf, bool) or not isinstance(leaf, int | float):
        raise ConfigError(
            f"{where}: a published value is a number or {NOT_PRINTED!r}, not {leaf!r}"
        )
    return leaf


def _config_entries(study: dict):
    """(row, column key, leaf, key path) of each value of the study's `published.values`."""
    values = (study.get("published") or {}).get("values") or {}
    if not isinstance(values, Mapping):
        raise ConfigError("values: a mapping row → column → value")
    _, columns = study_layout(shown_study(study))
    for row, by_column in values.items():
        if not columns:
            yield str(row), "", by_column, f"values.{row}"
            continue
        if not isinstance(by_column, Mapping):
            raise ConfigError(f"values.{row}: a mapping column → value")
        for column, leaf in by_column.items():
            yield str(row), str(column), leaf, f"values.{row}.{column}"


def config_values(study: dict) -> dict[Key, float | int | None]:
    """The study's `published.values`, keyed as `entry_keys` (`check_published` has refused
    any entry its table does not show; one that slips through here is left out)."""
    shown = {(row, column): task for row, column, task in entry_keys(study)}
    found: dict[Key, float | int | None] = {}
    for row, column, leaf, where in _config_entries(study):
        if (row, column) in shown:
            task = shown[(row, column)]
            found[(row, column, task)] = _leaf(leaf, task, where)
    return found


def _shown_names(study: dict) -> dict[str, list[str]]:
    """The names each dimension takes in the study's table (`entry_keys`), in its order: the
    study's models and recipes (a `choose` group as its label), its tasks and `blurb` where the
    table has a BLURB row or column."""
    rows, columns = study_layout(shown_study(study))
    names: dict[str, list[str]] = {rows: [], **{dim: [] for dim in columns}}
    for row, column, _ in entry_keys(study):
        parts = column.split(" / ") if columns else []
        for dim, name in zip([rows, *columns], [row, *parts], strict=True):
            if name not in names[dim]:
                names[dim].append(name)
    return names


def _config_knows(dim: str, name: str, config: dict) -> bool:
    """Whether the config defines the name (a model, a recipe, a task): then the study just
    does not list it."""
    if dim == "model":
        return name in map(str, config.get("models") or {})
    if dim == "recipe":
        return name in map(str, config.get("recipes") or {})
    return name in all_tasks(config)


def check_published(study: dict, config: dict) -> None:
    """A study's `published:` block. ConfigError (a ValueError), naming the key path under
    `published`, for a value that is not a number or `not printed`, a key that is not in the
    study's layout (a column key has a value per column dimension), and an entry whose row or
    column names a model, task or recipe the config does not know (a typo, a renamed recipe):
    the message names it and the ones the table has. A name the config knows but the study does
    not list (a study narrowed by a later config file, as config/blurb-smoke.yaml does) leaves
    the entry out with a line on stderr saying so."""
    if not study.get("published"):
        return
    rows, columns = study_layout(shown_study(study))
    shown = {(row, column): task for row, column, task in entry_keys(study)}
    names = _shown_names(study)
    for row, column, leaf, where in _config_entries(study):
        parts = column.split(" / ") if columns else []
        if len(parts) != len(columns):
            raise ConfigError(
                f"{where}: a column key is the values of {' / '.join(columns)} joined by ' / '"
            )
        narrowed = False
        for dim, name in zip([rows, *columns], [row, *parts], strict=True):
            known = names[dim]
            if name in known:
                continue
            part = "row" if dim == rows else "column"
            if _config_knows(dim, name, config):  # a study narrowed by a later config file
                print(
                    f"{where}: the {part} names {dim} {name!r}, which this study does not list"
                    " (narrowed): its value is not shown",
                    file=sys.stderr,
                )
                narrowed = True
                break
            raise ConfigError(
                f"{where}: the {part} names {dim} {name!r}, which the config does not know"
                f"{did_you_mean(name, known)}; the table's {dim}s are {', '.join(known)}: "
                "correct the key or remove the entry"
            )
        if narrowed:
            continue
        if (row, column) not in shown:  # every part known: not reached with today's layouts
            raise ConfigError(f"{where}: the study's table has no entry {row} / {column}")
        _leaf(leaf, shown[(row, column)], where)


def check_study_published(name: str, study: dict, config: dict) -> None:
    """`check_published` of the config's study `name`, its ConfigError naming the whole key
    path (`studies.{name}.published.values.<row>.<column>: …`); workflow/rules/validate.smk
    runs it for every study while the workflow is read."""
    try:
        check_published(study, config)
    except ValueError as err:
        raise ConfigError(f"studies.{name}.published.{err}") from None


def _decimals(values) -> int:
    """The most decimals the given numbers show (0 for integers)."""
    shown = [repr(float(v)).rstrip("0").split(".")[1] for v in values if isinstance(v, float)]
    return max((len(s) for s in shown), default=0)


def _paper_source(name: str) -> str:
    found = papers.source(name)
    where = [f"Table {found['table']}"] if found.get("table") is not None else []
    where += [f"page {found['page']}"] if found.get("page") else []
    where += [f"section {found['section']}"] if found.get("section") else []
    return ", ".join([found["paper"], *where])


def study_published(name: str, study: dict) -> dict:
    """{'values': (row key, column key, task) → value or None ('not printed') for the entries
    of `entry_keys` that have one, 'source': where they come from ('' when none), 'decimals':
    the printed precision (None when no value)}. The paper's values (blurbflow.published) count
    when the study has the name and the table layout of a transcribed one, each entry its
    table shows; the config's `published:` block wins entry by entry."""
    shown = set(entry_keys(study))
    values: dict[Key, float | int | None] = {}
    sources, decimals = [], []
    layout = study_layout(shown_study(study))
    if name in papers.studies() and papers.layout(name) == (layout[0], list(layout[1])):
        from_paper = {k: v for k, v in papers.published(name).items() if k in shown}
        if from_paper:
            values.update(from_paper)
            sources.append(_paper_source(name))
            decimals.append(papers.source(name)["decimals"])
    block = study.get("published") or {}
    from_config = config_values(study) if block else {}
    if from_config:
        values.update(from_config)
        sources.append(block.get("source") or f"the config's studies.{name}.published")
        numbers = [v for v in from_config.values() if v is not None]
        decimals.append(block["decimals"] if "decimals" in block else _decimals(numbers))
    order = {key: i for i, key in enumerate(entry_keys(study))}
    return {
        "values": dict(sorted(values.items(), key=lambda item: order[item[0]])),
        "source": "; ".join(sources),
        "decimals": max(decimals) if decimals else None,
    }
