"""The recipe options as the schema and config/README.md write them, from the fields'
metadata (blurbflow.options), and readable types of schema nodes."""

from __future__ import annotations

import json
import re

from blurbflow.options import UNSET, recipe_options

COMMAND = "python -m blurbflow.docgen"
SCHEMA_MARKS = ("  # BEGIN recipe options", "  # END recipe options")
_PLAIN = re.compile(r"[A-Za-z_$][A-Za-z0-9_+./#$-]*")
_YAML_WORDS = {"null", "true", "false", "yes", "no", "on", "off", "y", "n", "~"}


# -- the schema's recipe options ------------------------------------------------------------
def _flow(value) -> str:
    """`value` as one line of YAML flow style (keys and simple words unquoted)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flow(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, str):
        plain = _PLAIN.fullmatch(value) and value.lower() not in _YAML_WORDS
        return value if plain else json.dumps(value, ensure_ascii=False)
    return json.dumps(value)


def default_text(value) -> str:
    if value is UNSET:
        return "unset"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def option_schema(about: dict) -> dict:
    """One option's schema property: its schema, its choices as `enum`, its help (and default)
    as `description`. No `default` keyword: Snakemake's `validate` would write it into every
    recipe, so the default is text."""
    node = dict(about.get("schema") or {})
    if about.get("choices"):
        node["enum"] = list(about["choices"])
    help_ = about["help"]
    if "default" in about and about["default"] is not UNSET:
        help_ += f" (default: {default_text(about['default'])})"
    node["description"] = help_
    return node


def options_block() -> str:
    """The lines of `$defs.options` in the schema, between the markers."""
    lines = [
        f"{SCHEMA_MARKS[0]}: generated from blurbflow.options by `{COMMAND}`",
        "  options:",
        "    description: fine-tuning options (docs/recipes.md, config/README.md); every key is "
        "optional",
        "    type: object",
        "    additionalProperties: false",
        "    properties:",
    ]
    for name, about in recipe_options().items():
        lines.append(f"      {name}: {_flow(option_schema(about))}")
    lines.append(SCHEMA_MARKS[1])
    return "\n".join(lines) + "\n"


def replace_region(text: str, begin: str, end: str, new: str, where: str) -> str:
    """`text` with the lines from the one starting with `begin` to the one starting with `end`
    (both included) replaced by `new` (which holds both markers)."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith(begin)]
    ends = [i for i, line in enumerate(lines) if line.startswith(end)]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ValueError(f"{where}: expected one `{begin.strip()}` … `{end.strip()}` region")
    return "".join(lines[: starts[0]]) + new + "".join(lines[ends[0] + 1 :])


# -- readable types ------------------------------------------------------------------------------
def _enum_text(value) -> str:
    """An allowed value; text that YAML would read as another type is quoted (`"true"`)."""
    if isinstance(value, str) and value.lower() in _YAML_WORDS:
        return json.dumps(value)
    return default_text(value)


def type_text(node: dict, defs: dict) -> str:
    """A short reading of a schema node's type: `number in [0, 1]`, `integer ≥ 1 or null`, …"""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        return type_text({**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}, defs)
    if "enum" in node:
        return ", ".join(f"`{_enum_text(v)}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    for key in ("oneOf", "anyOf"):
        if key in node and "type" not in node:  # with a type: alternatives of required keys
            return " or ".join(type_text(alt, defs) for alt in node[key])
    types = node.get("type", "any")
    types = types if isinstance(types, list) else [types]
    parts = []
    for kind in types:
        if kind == "array":
            parts.append(f"list of {type_text(node.get('items', {}), defs)}")
        elif kind == "object" and isinstance(node.get("additionalProperties"), dict):
            extra = node["additionalProperties"]
            entry = "entries (keys below)" if "properties" in extra else type_text(extra, defs)
            parts.append(f"mapping of names to {entry}")
        elif kind in ("integer", "number"):
            parts.append(kind + _bounds(node))
        else:
            parts.append({"object": "mapping", "any": "any"}.get(kind, kind))
    return " or ".join(parts)


def _bounds(node: dict) -> str:
    low = ("[", node["minimum"]) if "minimum" in node else ("(", node.get("exclusiveMinimum"))
    high = ("]", node["maximum"]) if "maximum" in node else (")", node.get("exclusiveMaximum"))
    if low[1] is not None and high[1] is not None:
        return f" in {low[0]}{low[1]}, {high[1]}{high[0]}"
    if low[1] is not None:
        return f" {'≥' if low[0] == '[' else '>'} {low[1]}"
    if high[1] is not None:
        return f" {'≤' if high[0] == ']' else '<'} {high[1]}"
    return ""


def options_list(defs: dict) -> str:
    """The recipe options as one list: option (values; default): meaning."""
    rows = []
    for name, about in recipe_options().items():
        node = option_schema({**about, "default": UNSET})  # the default is said apart
        default = f"; default `{default_text(about['default'])}`" if "default" in about else ""
        rows.append(f"- `{name}` ({type_text(node, defs)}{default}): {_one_line(about['help'])}")
        for key, sub in node.get("properties", {}).items():  # init_from's keys
            text = _one_line(sub.get("description", ""))
            rows.append(f"  - `{name}.{key}` ({type_text(sub, defs)}): {text}")
    return "\n".join(rows) + "\n"


def _one_line(text: str) -> str:
    return str(text).replace("\n", " ")


# -- docs/recipes.md's defaults ---------------------------------------------------------------
DEFAULTS_PAGE = "docs/recipes.md"
DEFAULTS_MARKS = ("<!-- BEGIN option defaults", "<!-- END option defaults -->")


def defaults_block() -> str:
    """What a recipe that sets nothing trains with: every recipe option with a default value (not
    `unset`, not null), from its field."""
    shown = [
        f"`{name}: {default_text(about['default'])}`"
        for name, about in recipe_options().items()
        if about.get("default") not in (UNSET, None)
    ]
    return (
        f"{DEFAULTS_MARKS[0]}: generated from blurbflow.options by `{COMMAND}` -->\n"
        + ", ".join(shown)
        + ".\n"
        + DEFAULTS_MARKS[1]
        + "\n"
    )
