"""The papers' published values, transcribed once, in each study's own table layout.

One YAML file per paper (`gu2021.yaml`, `tinn2023.yaml`, `lewis2020.yaml`, `alrowili2021.yaml`)
holds, per study of config.yaml (its name), where the numbers come from (`table`, and `page` or
`section`), the study's table layout (`rows`, `columns`: as config.yaml's `table:`), and
`entries`: nested mappings over our model, task and recipe names (a `choose` group by its label)
in the order `keys` gives, down to the value. A value is the number as printed, `{value, std}`
where the paper prints a standard deviation, or `not printed` where the study's table shows an
entry the paper has none for (`notes`, keyed by one of our names, says why). The task `blurb` is
the paper's aggregate (the BLURB score) of a column; `task:` names the study's one task when the
table shows no task dimension. `label` maps our names to the paper's row and column labels (the
file's `label`, then the study's); `printed_only` keeps the numbers the paper's table prints that
no entry of the study shows (unreleased models, extra rows), keyed by the paper's labels; `decimals`
is the printed precision.

Plain Python and yaml, no pandas and nothing of blurbflow: the workflow may read it while it plans.
"""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

NOT_PRINTED = "not printed"
BLURB = "blurb"  # the task key of the paper's aggregate (BLURB score)
DIMS = ("model", "task", "recipe")
ORDER = ("gu2021.yaml", "tinn2023.yaml", "lewis2020.yaml", "alrowili2021.yaml")  # then any other
SOURCE_KEYS = ("table", "page", "section")


@functools.cache
def _papers() -> dict[str, dict]:
    """File name → its parsed YAML: every *.yaml beside this module, the papers in ORDER."""
    files = sorted(Path(__file__).parent.glob("*.yaml"), key=lambda p: _rank(p.name))
    return {p.name: yaml.safe_load(p.read_text(encoding="utf-8")) for p in files}


def _rank(name: str) -> tuple[int, str]:
    return (ORDER.index(name) if name in ORDER else len(ORDER), name)


@functools.cache
def _studies() -> dict[str, tuple[str, dict]]:
    """Study name → (file name, its YAML entry); a study in two files is an error."""
    found: dict[str, tuple[str, dict]] = {}
    for name, paper in _papers().items():
        for study, entry in (paper.get("studies") or {}).items():
            if study in found:
                raise ValueError(f"study {study!r} is in {found[study][0]} and {name}")
            found[study] = (name, entry)
    return found


def studies() -> list[str]:
    """The studies with published values, in file order."""
    return list(_studies())


def _entry(study: str) -> tuple[str, dict]:
    try:
        return _studies()[study]
    except KeyError:
        raise KeyError(f"no published values for study {study!r}") from None


def column_key(values) -> str:
    """A column key: the column dimensions' values joined as the study's table labels them."""
    return " / ".join(values)


def _leaves(node, depth: int, path: tuple[str, ...] = ()):
    """(path of `depth` keys, leaf) for each leaf of the nested `entries`."""
    if depth == 0:
        yield path, node
        return
    if not isinstance(node, dict):
        raise ValueError(f"entries {'/'.join(path) or '(top)'}: expected {depth} more level(s)")
    for key, child in node.items():
        yield from _leaves(child, depth - 1, (*path, str(key)))


def _value(leaf):
    """(value or None, std or None) of one leaf."""
    if leaf == NOT_PRINTED:
        return None, None
    if isinstance(leaf, dict):
        if set(leaf) - {"value", "std"} or "value" not in leaf:
            raise ValueError(f"a value mapping has `value` and optionally `std`, not {leaf}")
        return _number(leaf["value"]), _number(leaf.get("std"), optional=True)
    return _number(leaf), None


def _number(value, optional: bool = False):
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"a published value is a number or {NOT_PRINTED!r}, not {value!r}")
    return value


@functools.cache
def _flat(study: str) -> dict[tuple[str, str, str], tuple]:
    _, entry = _entry(study)
    rows, columns = entry["rows"], list(entry["columns"])
    keys = list(entry["keys"])
    if sorted(keys) != sorted([rows, *columns]) or not set(keys) <= set(DIMS):
        raise ValueError(f"{study}: keys {keys} must be the rows and columns {[rows, *columns]}")
    if "task" not in keys and not entry.get("task"):
        raise ValueError(f"{study}: no task dimension in the table, so `task:` must name it")
    flat = {}
    for path, leaf in _leaves(entry["entries"], len(keys)):
        at = dict(zip(keys, path, strict=True))
        task = at.get("task", entry.get("task"))
        key = (at[rows], column_key(at[d] for d in columns), task)
        if key in flat:
            raise ValueError(f"{study}: entry {key} given twice")
        flat[key] = _value(leaf)
    return flat


def published(study: str) -> dict[tuple[str, str, str], float | int | None]:
    """(row key, column key, task) → the published value, None where `not printed`. The row key
    is the study's row dimension's value, the column key its column dimensions' values joined by
    ' / ' (`column_key`), in our names; the task `blurb` is the paper's aggregate (study_table
    labels that row `BLURB` or `BLURB-style average (types)`, and such a column puts that label
    first)."""
    return {key: value for key, (value, _) in _flat(study).items()}


def published_std(study: str) -> dict[tuple[str, str, str], float | int]:
    """The standard deviations the paper prints beside its values, keyed as `published`."""
    return {key: std for key, (_, std) in _flat(study).items() if std is not None}


def source(study: str) -> dict:
    """Where the study's values come from: `paper`, `file`, `table`, `page` or `section`, and
    the printed `decimals`."""
    name, entry = _entry(study)
    paper = _papers()[name]
    found = {"paper": paper["paper"], "file": name}
    found.update({k: entry[k] for k in SOURCE_KEYS if k in entry})
    found["decimals"] = entry.get("decimals", paper.get("decimals"))
    return found


def layout(study: str) -> tuple[str, list[str]]:
    """(rows dimension, column dimensions) the values are keyed by (config.yaml's `table:`)."""
    _, entry = _entry(study)
    return entry["rows"], list(entry["columns"])


def labels(study: str) -> dict[str, str]:
    """Our name → the paper's label in this table, where they differ."""
    name, entry = _entry(study)
    return {**(_papers()[name].get("label") or {}), **(entry.get("label") or {})}


def notes(study: str) -> dict[str, str]:
    """Our name (a model, task, recipe or `blurb`) → why its entries are as they are."""
    return dict(_entry(study)[1].get("notes") or {})


def printed_only(study: str) -> dict:
    """The numbers the paper's table prints that no entry of the study shows, by paper label."""
    return dict(_entry(study)[1].get("printed_only") or {})
