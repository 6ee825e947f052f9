"""The configuration reference config/README.md: generated from the schema and the options'
help (`python -m blurbflow.docgen`), and every key of the schema is described there."""

from __future__ import annotations

from pathlib import Path

import yaml

from blurbflow.docgen.__main__ import REFERENCE, SCHEMA
from blurbflow.docgen.reference import reference
from blurbflow.options import recipe_options

REPO = Path(__file__).resolve().parents[1]


def _properties(node, defs, path=""):
    """(path, key, node) of every `properties` entry anywhere in the schema, $defs included."""
    if isinstance(node, dict):
        for key, child in (node.get("properties") or {}).items():
            yield path, key, child
        for key, child in node.items():
            yield from _properties(child, defs, f"{path}/{key}")
    elif isinstance(node, list):
        for child in node:
            yield from _properties(child, defs, path)


def _described(node: dict, defs: dict) -> bool:
    if node.get("description"):
        return True
    ref = node.get("$ref")
    return bool(ref) and _described(defs[ref.rsplit("/", 1)[1]], defs)


def test_the_committed_reference_is_the_generated_text():
    schema = yaml.safe_load((REPO / SCHEMA).read_text())
    assert (REPO / REFERENCE).read_text() == reference(schema), (
        "config/README.md is out of date: run `python -m blurbflow.docgen`"
    )


def test_every_schema_key_is_described_in_the_schema_and_the_reference():
    schema = yaml.safe_load((REPO / SCHEMA).read_text())
    defs = schema["$defs"]
    text = (REPO / REFERENCE).read_text()
    undescribed, missing = [], []
    for path, key, node in _properties(schema, defs):
        if not _described(node, defs):
            undescribed.append(f"{path}/{key}")
        if f".{key}` (" not in text and f"- `{key}` (" not in text and f"## `{key}`" not in text:
            missing.append(f"{path}/{key}")
    assert not undescribed, f"schema keys without a description: {undescribed}"
    assert not missing, f"schema keys missing from config/README.md: {missing}"
    for name in schema["properties"]:
        assert f"## `{name}`" in text
    for name, about in recipe_options().items():  # the recipe options are one list
        assert f"- `{name}` (" in text and about["help"].replace("\n", " ") in text, name
