"""The configuration reference, config/README.md, from the config schema: a section per
top-level key with a table of every key below it (type, default, description), and the recipe
options (`defaults:` and every recipe) as one table."""

from __future__ import annotations

from collections.abc import Iterator

from blurbflow.docgen.options import COMMAND, default_text, options_list, type_text

OPTIONS_REF = "#/$defs/options"
MAX_TYPE = 80  # characters of a readable type before the table defers to the description
# the placeholder of a mapping's own keys, by the key that holds the mapping
NAMES = {
    "models": "<model>",
    "tasks": "<task>",
    "recipes": "<recipe>",
    "studies": "<study>",
    "recipe_scope": "<recipe>",
    "choose": "<label>",
    "values": "<row>",
    "splits": "<split>",
    "columns": "<column>",
    "seeds": "<task>",
    "epochs": "<task>",
}

INTRO = f"""\
# Configuration reference

<!-- generated from workflow/schemas/config.schema.yaml and blurbflow.options by
`{COMMAND}`; edit those, not this file (tests/test_config_reference.py) -->

A config is one YAML file, checked against `workflow/schemas/config.schema.yaml` before any
job: the paper config `config.yaml` (the papers' studies), the demo config `config/demo.yaml`,
or `config/blurb.yaml` (one model given as `--config model=…`). Keys are paths; `<model>`,
`<task>`, `<recipe>`, `<study>` stand for names you choose. A key without a default is optional
unless its section says it is required. The recipe options (`defaults:` and every recipe) are
one list, [Recipe options](#recipe-options); [docs/recipes.md](../docs/recipes.md) says more.
Words such as [dev](../docs/concepts.md#the-run), [power](../docs/concepts.md#seeds-and-comparisons)
and [verdict](../docs/concepts.md#the-run): the glossary.
"""


def _resolve(node: dict, defs: dict) -> tuple[dict, str | None]:
    """A node with its `$ref` followed (its own keys win), and the name of that definition."""
    ref = node.get("$ref")
    if not ref:
        return node, None
    name = ref.rsplit("/", 1)[1]
    target, _ = _resolve(defs[name], defs)
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}, name


def _description(node: dict, defs: dict) -> str:
    return _resolve(node, defs)[0].get("description", "")


def keys(node: dict, defs: dict, path: str, seen: set) -> Iterator[tuple[str, dict]]:
    """(key path, node) of every key below `node`; the recipe options are not entered (their
    own table), and each definition is entered once (`seen`)."""
    if node.get("$ref") == OPTIONS_REF:
        return
    node, name = _resolve(node, defs)
    if name is not None:
        if name in seen:
            return
        seen.add(name)
    for key, child in (node.get("properties") or {}).items():
        yield f"{path}.{key}", child
        yield from keys(child, defs, f"{path}.{key}", seen)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra.get("$ref") != OPTIONS_REF:
        inner, _ = _resolve(extra, defs)
        if inner.get("properties") or any(k in inner for k in ("oneOf", "anyOf")):
            placeholder = NAMES.get(path.rsplit(".", 1)[-1], "<key>")
            yield from keys(extra, defs, f"{path}.{placeholder}", seen)
    for alternatives in (node.get("oneOf"), node.get("anyOf")):
        for alt in alternatives or ():
            yield from keys(alt, defs, path, seen)


def _row(path: str, node: dict, defs: dict) -> str:
    resolved, _ = _resolve(node, defs)
    default = f"; default `{default_text(resolved['default'])}`" if "default" in resolved else ""
    description = _description(node, defs).replace("\n", " ")
    if node.get("$ref") == OPTIONS_REF or resolved is defs.get("options"):
        description += " ([Recipe options](#recipe-options))"
    kind = "recipe options" if node.get("$ref") == OPTIONS_REF else type_text(node, defs)
    if len(kind) > MAX_TYPE:  # several shapes: the description says them
        kind = "see description"
    return f"- `{path}` ({kind}{default}): {description}"


def sections(schema: dict) -> Iterator[tuple[str, dict, list[tuple[str, dict]]]]:
    """(top-level key, its node, the keys below it, deduplicated) in the schema's order."""
    defs = schema.get("$defs", {})
    for top, node in schema["properties"].items():
        rows: dict[str, dict] = {}
        for path, child in keys(node, defs, top, set()):
            rows.setdefault(path, child)
        yield top, node, list(rows.items())


def reference(schema: dict) -> str:
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    out = [INTRO]
    for top, node, rows in sections(schema):
        out.append(f"## `{top}`{' (required)' if top in required else ''}\n")
        out.append(_description(node, defs) + "\n")
        resolved, _ = _resolve(node, defs)
        extra = resolved.get("additionalProperties")
        kind = (
            "a mapping of recipe names to recipe options"
            if isinstance(extra, dict) and extra.get("$ref") == OPTIONS_REF
            else type_text(node, defs)
        )
        if node.get("$ref") == OPTIONS_REF:
            kind = (
                "recipe options, the base of every recipe (see [Recipe options](#recipe-options))"
            )
        default = (
            f"; default `{default_text(resolved['default'])}`" if "default" in resolved else ""
        )
        out.append(f"Type: {kind}{default}.\n")
        if rows:
            out.extend(_row(path, child, defs) for path, child in rows)
            out.append("")
    out.append("## Recipe options\n")
    out.append(
        "Every key of `defaults:` and of each entry of `recipes:`. A value that differs from "
        "the default joins the cell's options, so changing it re-trains those cells; `unset` "
        "options have no default and join the cell only when set. `lr`, `batch_size`, "
        "`freeze_lower`, `layerwise_lr_decay` "
        "and `reinit_top` may be lists: a grid, chosen on dev.\n"
    )
    out.append(options_list(defs))
    return "\n".join(out)
