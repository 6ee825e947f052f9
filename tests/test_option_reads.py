"""An option nothing reads fails here: every field of `CellOptions` (and of its `InputOptions`)
is read by the code that acts on options — the engine (train/, models/, data/, qa/, metrics/,
tasks/) or the planning that turns options into jobs (config/grid.py, config/init_from.py,
cluster.py) —
directly (`options.lr`) or through one of CellOptions' own properties that such code reads
(`options.selection` reads `select`). A static check of attribute names: a field added to the
dataclass and its docs but wired to nothing is caught before it silently changes every cell's
identity and nothing else (docs/extending.md, "A recipe option")."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import textwrap
from pathlib import Path

from blurbflow.options import CellOptions
from blurbflow.options.fields import InputOptions

# the packages and modules that act on options, by import name (they may move)
READERS = [
    "train",
    "models",
    "data",
    "qa",
    "metrics",
    "tasks",
    "config.grid",
    "config.init_from",
    "cluster",
]
# Fields that are in a cell's options on purpose though no code acts on them, and why.
RECORD_ONLY = {
    "code_version": "in every cell's options and identity so that changing it re-runs them all",
    "selected_from": "records the search point a final cell trained with (train/job.py)",
}


def _modules(names: list[str]) -> list[Path]:
    found = []
    for name in names:
        path = Path(importlib.import_module(f"blurbflow.{name}").__file__)
        found += sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
    return found


def read_attributes(paths: list[Path]) -> set[str]:
    """Every attribute name read (`x.name`, not assigned) in these modules."""
    names = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                names.add(node.attr)
    return names


def property_reads(cls: type) -> dict[str, set[str]]:
    """Each property or method of `cls` → the `self.<field>` it reads."""
    (node,) = ast.parse(textwrap.dedent(inspect.getsource(cls))).body
    reads = {}
    for item in node.body:
        if isinstance(item, ast.FunctionDef):
            reads[item.name] = {
                n.attr
                for n in ast.walk(item)
                if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == "self"
            }
    return reads


def unread_fields(fields: list[str], read: set[str], through: dict[str, set[str]]) -> list[str]:
    """The fields neither read by name nor through a property that is read."""
    reached = set(read)
    for name, fields_it_reads in through.items():
        if name in read:
            reached |= fields_it_reads
    return [f for f in fields if f not in reached and f not in RECORD_ONLY]


def _fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


READ = read_attributes(_modules(READERS))


def test_every_cell_option_is_read_by_engine_code():
    fields = _fields(CellOptions) + _fields(InputOptions)
    assert unread_fields(fields, READ, property_reads(CellOptions)) == [], (
        "a CellOptions field no engine or planning code reads: wire it where it acts "
        "(docs/extending.md, 'A recipe option'), or remove it"
    )


def test_record_only_fields_are_exactly_those_nothing_reads():
    for name in RECORD_ONLY:
        assert name in _fields(CellOptions), f"{name}: no such field"
        assert name not in READ, f"{name} is read now: take it off RECORD_ONLY"


def test_a_planted_unused_field_fails_the_check():
    planted = dataclasses.make_dataclass(
        "Planted",
        [("warmup_shape", str, dataclasses.field(default="linear"))],
        bases=(CellOptions,),
        frozen=True,
    )
    unread = unread_fields(_fields(planted), READ, property_reads(CellOptions))
    assert unread == ["warmup_shape"]
    # and through a property: `select` counts only because `selection` is read
    assert "select" not in READ and "selection" in READ
    assert unread_fields(["select"], READ - {"selection"}, property_reads(CellOptions)) == [
        "select"
    ]
