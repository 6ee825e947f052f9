"""Readable errors of the config's JSON schema: the key path, the closest known key, and what
the schema's `description` says is expected (before Snakemake's own `validate`)."""

from __future__ import annotations

from blurbflow.util.errors import ConfigError, did_you_mean


def _schema_node(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def check_keys(config: dict, schema: dict, node: dict | None = None, where: str = "") -> None:
    """Name the first key the schema does not know, with the closest known key, before the
    schema's own (less readable) validation runs."""
    node = _schema_node(schema, schema if node is None else node)
    if not isinstance(config, dict) or node.get("type") not in ("object", ["object", "null"]):
        return
    known = node.get("properties", {})
    extra = node.get("additionalProperties", True)
    for key, value in config.items():
        path = f"{where}.{key}" if where else str(key)
        if key in known:
            check_keys(value, schema, known[key], path)
        elif isinstance(extra, dict):
            check_keys(value, schema, extra, path)
        elif extra is False:
            raise ConfigError(
                f"{path}: unknown key{did_you_mean(str(key), known)}; "
                f"allowed here: {', '.join(sorted(known))}"
            )


def check_values(config: dict, schema: dict) -> None:
    """Name the first value the schema rejects by its key path, with what is expected (the
    schema's `description` where it has one), before Snakemake's `validate` runs."""
    import jsonschema
    from jsonschema.exceptions import best_match

    error = best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is None:
        return
    path = ".".join(map(str, error.absolute_path)) or "(top level)"
    node = error.parent.schema if error.parent is not None else error.schema
    expected = node.get("description") or error.schema.get("description")
    hint = f"; expected {expected}" if expected else ""
    if isinstance(error.instance, bool) and error.validator == "type":
        # YAML 1.1 reads yes/no/on/off/true/false unquoted as booleans
        hint += (
            f"; YAML read an unquoted word as the boolean {str(error.instance).lower()}: if you "
            'meant a word such as no, yes, on or off, quote it ("no")'
        )
    raise ConfigError(f"{path}: {error.message}{hint}")
