"""The building blocks of a cell's options (blurbflow.options): the UNSET marker, the field
helpers that give each recipe option its help, allowed values and schema (the one place they are
written; blurbflow.docgen generates the config schema and the docs from them), and the smaller
option groups: the inputs (tokenization), the model entry and `init_from`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from blurbflow.util.errors import ConfigError


class _Unset:
    """An option that is not part of a cell (left out of its serialised form); falsy."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self):
        return (_Unset, ())


UNSET: Any = _Unset()


def _optional(help: str):
    return field(default=UNSET, metadata={"help": help})


def _option(
    default: Any = dataclasses.MISSING,
    help: str = "",
    schema: dict | None = None,
    *,
    choices: tuple[str, ...] | None = None,
) -> Any:
    """A recipe option: its default, help and allowed values, the one place they are written
    (the config schema, docs/recipes.md and config/README.md are generated from them:
    `python -m blurbflow.option_docs`). `schema`: its JSON schema, less enum and description."""
    metadata = {"help": help, "recipe": True, "schema": schema or {}}
    if choices:
        metadata["choices"] = choices
    return field(default=default, metadata=metadata)


def _about(help: str) -> Any:
    """A field that the workflow sets, not a recipe (required: no default)."""
    return field(metadata={"help": help})


def _grid_axis(one: dict) -> dict:
    """One value, or a list of them: a grid axis chosen on dev (blurbflow.config.grid)."""
    return {"oneOf": [one, {"type": "array", "minItems": 1, "items": one}]}


class S:
    """The JSON schemas of the recipe options (less enum and description), by shape."""

    POSITIVE = {"$ref": "#/$defs/positive_number"}
    UNIT = {"type": "number", "minimum": 0, "maximum": 1}
    BETA = {"type": "number", "minimum": 0, "exclusiveMaximum": 1}
    COUNT = {"type": "integer", "minimum": 0}
    SIZE = {"type": "integer", "minimum": 1}
    SOME = {"type": ["integer", "null"], "minimum": 1}  # a count or null
    NONNEG = {"type": "number", "minimum": 0}
    BOOL = {"type": "boolean"}
    NORM = {"type": ["number", "null"], "exclusiveMinimum": 0}
    EPOCHS = {"$ref": "#/$defs/epochs"}
    LR = {"$ref": "#/$defs/lr"}
    BATCH = {"$ref": "#/$defs/batch_size"}
    FREEZE = _grid_axis({"$ref": "#/$defs/freeze_value"})
    DECAY = _grid_axis({"$ref": "#/$defs/decay_value"})
    REINIT = _grid_axis(COUNT)
    NAMES = {
        "oneOf": [{"type": "string"}, {"type": "array", "minItems": 1, "items": {"type": "string"}}]
    }
    INIT_FROM = {
        "type": "object",
        "additionalProperties": False,
        "required": ["task", "recipe"],
        "properties": {
            "task": {"type": "string", "description": "the source cell's task"},
            "recipe": {"type": "string", "description": "the source cell's recipe"},
            "seed": {
                "oneOf": [{"const": "same"}, {"type": "integer", "minimum": 0}],
                "description": "`same` (the source seed of the same number) or a seed",
            },
        },
    }


# Recipe keys that are no cell option: `extends` composes recipes, `description` is text.
RECIPE_KEYS: dict[str, dict] = {
    "extends": {
        "help": "the recipe whose options this one starts from (its own keys win)",
        "schema": {"type": "string"},
    },
    "description": {
        "help": "free text for the report; no cell option, so editing it re-runs nothing",
        "schema": {"type": "string"},
    },
}


@dataclass(frozen=True, kw_only=True)
class InputOptions:
    """Everything that changes tokenization: one cache per (model, task, key)."""

    max_length: int = _option(
        help="input length in tokens, longer inputs cut (default: the task's, e.g. GAD 128)",
        schema={"type": "integer", "minimum": 8},
    )
    segment_ids: str = _option(
        "pair",
        "QA/STS pair inputs: token type ids 0/1 (`pair`) or all 0 (`single`)",
        choices=("pair", "single"),
    )
    tagging: str = _option(
        "BIO",
        "NER/PICO training tag scheme; predictions are decoded back to BIO before scoring",
        choices=("BIO", "BIOUL", "IO"),
    )
    re_input: str = _option(
        "dummify",
        "RE input: entities replaced by placeholders, wrapped in [E1]/[E2] markers, or the "
        "original text",
        choices=("dummify", "markers", "original"),
    )

    # the allowed values of the input options that have a few (the fields' metadata)
    VALUES: ClassVar[dict[str, tuple[str, ...]]]

    def key(self, applicable: tuple[str, ...]) -> str:
        """The cache key: `L{max_length}` then the values of the input options that apply to
        the task type (`applicable`), e.g. `L256-markers` (RE), `L512-BIOUL` (NER), `L512`."""
        parts = [f"L{int(self.max_length)}"]
        for name in applicable:
            value = getattr(self, name)
            if value not in self.VALUES[name]:
                raise ConfigError(f"{name}: {value!r} is not one of {', '.join(self.VALUES[name])}")
            parts.append(str(value))
        return "-".join(parts)

    @classmethod
    def from_key(cls, key: str) -> InputOptions:
        """The inputs a key stands for (options it leaves out take their defaults)."""
        head, *rest = key.split("-")
        if not head.startswith("L") or not head[1:].isdigit():
            raise ValueError(f"input key {key!r}: expected L<max_length>[-<option value>…]")
        given: dict[str, Any] = {"max_length": int(head[1:])}
        for value in rest:
            names = [name for name, values in cls.VALUES.items() if value in values]
            if not names or names[0] in given:
                raise ValueError(f"input key {key!r}: unknown or repeated part {value!r}")
            given[names[0]] = value
        return cls(**given)


@dataclass(frozen=True, kw_only=True)
class ModelOptions:
    """The model a cell loads, as its config entry gives it (blurbflow.models.prefetch)."""

    model: str  # the config's name for it
    model_source: str  # a local folder, a hub id or a url (blurbflow.models.archive)
    revision: str = UNSET  # the settings below: only those the entry sets
    cased: bool = UNSET
    add_prefix_space: bool = UNSET
    trust_remote_code: bool = UNSET
    sha256: str = UNSET  # a URL model's archive, pinned
    subfolder: str = UNSET  # the model folder inside that archive

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not UNSET
        }


@dataclass(frozen=True, kw_only=True)
class InitFrom:
    """The source cells a dependant starts from (blurbflow.config.init_from)."""

    task: str
    recipe: str
    hparams: str
    seed: int | str = "same"  # `same`: seed N starts from the source's seed N

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


InputOptions.VALUES = {
    f.name: f.metadata["choices"]
    for f in dataclasses.fields(InputOptions)
    if "choices" in f.metadata
}


def recipe_fields(*classes) -> dict[str, dict]:
    """Every recipe key → its metadata: RECIPE_KEYS, then the recipe options among the fields of
    `classes`, with `default` where the field has one (UNSET: joined only when set)."""
    out = {name: dict(about) for name, about in RECIPE_KEYS.items()}
    for cls in classes:
        for f in dataclasses.fields(cls):
            if f.metadata.get("recipe"):
                about = dict(f.metadata)
                if f.default is not dataclasses.MISSING:
                    about["default"] = f.default
                out[f.name] = about
    return out
