"""A cell's options as one typed, frozen object: everything its result depends on.

`CellOptions` is built once, when the config expands into cells (blurbflow.config), and passed
whole to everything below the workflow steps: the engine, the tokenization inputs, identity,
verification and the `hparams_from` hand-over (`dataclasses.replace`). Every default is written
once, on its field (Gu et al. 2021's fine-tuning recipe: the original BERT optimizer, Adam
without bias correction, epsilon 1e-6; a config's `defaults` and recipes override them).

The serialised form (`to_dict`) is the flat mapping that the finetune rule's params, result.json
and cells.parquet carry. Options that join a cell only when set (a model's `revision`, early
stopping's `patience`, …) default to `UNSET` and are left out of it, so cells that do not set
them keep their params; `from_dict` rejects any key it does not know.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from blurbflow.errors import ConfigError


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


def _optional():
    return field(default=UNSET)


@dataclass(frozen=True, kw_only=True)
class InputOptions:
    """Everything that changes tokenization: one cache per (model, task, key)."""

    max_length: int
    segment_ids: str = "pair"  # QA/STS: `pair` keeps token type ids 0/1, `single` all 0
    tagging: str = "BIO"  # NER/PICO label scheme (blurbflow.train.tagging)
    re_input: str = "dummify"  # RE: placeholders, entity markers or the original text

    VALUES: ClassVar[dict[str, tuple[str, ...]]] = {
        "tagging": ("BIO", "BIOUL", "IO"),
        "re_input": ("dummify", "markers", "original"),
        "segment_ids": ("pair", "single"),
    }

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
    """The source cells a dependant starts from (blurbflow.init_from)."""

    task: str
    recipe: str
    hparams: str
    seed: int | str = "same"  # `same`: seed N starts from the source's seed N

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True, kw_only=True)
class CellOptions:
    # where the cell sits
    model: str
    model_source: str  # the model's local folder or hub id
    task: str
    recipe: str
    hparams: str  # the grid point's folder (`lr3e-05-bs16`, or `selected`)
    seed: int = _optional()  # a cell's; a job (all its seeds) has none
    code_version: str = "1"
    inputs: InputOptions
    # the recipe (docs/recipes.md)
    epochs: int | None = 3
    lr: float | None = 5e-5  # None until a `hparams_from` selection sets it
    batch_size: int | None = 32
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    dropout: float = 0.1
    adam_bias_correction: bool = False
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-6
    max_grad_norm: float | None = 1.0
    freeze_lower: int | str | None = 0
    layerwise_lr_decay: float | None = None
    reinit_top: int | None = 0
    remove_top: int = 0
    select: str = "best_dev"
    eval_batch_size: int = 64
    train_on: str = "train"
    train_subsample: int | None = None
    subsample_seed: int = 0
    head: str = "linear"
    re_pooling: str = "cls"
    batching: str = "bucketed"
    precision: str = "bf16"
    # joined only when set
    eval_every_steps: int | None = _optional()
    patience: int | None = _optional()
    revision: str = _optional()  # the model entry's settings (blurbflow.models.prefetch)
    cased: bool = _optional()
    add_prefix_space: bool = _optional()
    trust_remote_code: bool = _optional()
    sha256: str = _optional()  # a URL model's archive digest and the model folder inside it
    subfolder: str = _optional()
    hparams_from: tuple[str, ...] = _optional()  # the searches a final model's setting is from
    hparams_models: tuple[str, ...] = _optional()  # reference models that chose the point
    hparams_task: str = _optional()  # a cross-validation fold: its tune fold
    selection_file: str = _optional()
    selected_from: str = _optional()  # recipe/hparams the selection chose (set by the job)
    init_from: InitFrom = _optional()
    keep_weights: bool = _optional()  # a source of init_from saves its weights
    keep_model: bool = _optional()  # every seed keeps a Hugging Face folder (train/kept.py)

    INPUT_KEYS: ClassVar[tuple[str, ...]] = ("max_length", "segment_ids", "tagging", "re_input")

    def __post_init__(self):
        for name in ("hparams_from", "hparams_models"):  # tuples, so that options hash
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))

    # -- the serialised form ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The flat mapping of the rule's params and result.json (UNSET options left out)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is UNSET:
                continue
            if f.name == "inputs":
                out.update(dataclasses.asdict(value))
            elif f.name == "init_from":
                out["init_from"] = value.to_dict()
            elif f.name in ("hparams_from", "hparams_models"):
                out[f.name] = list(value)  # as the config and result.json write them
            else:
                out[f.name] = value
        return out

    def to_json(self) -> str:
        return options_json(self.to_dict())

    @classmethod
    def from_dict(cls, given: dict[str, Any], where: str = "options") -> CellOptions:
        """The options a mapping of `to_dict`'s form stands for; an unknown key is an error."""
        unknown = sorted(set(given) - _KNOWN - set(cls.INPUT_KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown option(s) {', '.join(map(repr, unknown))}")
        if "max_length" not in given:
            raise ConfigError(f"{where}: no max_length")
        inputs = InputOptions(**{k: given[k] for k in cls.INPUT_KEYS if k in given})
        fields_ = {k: v for k, v in given.items() if k not in cls.INPUT_KEYS}
        try:
            if isinstance(fields_.get("init_from"), dict):
                fields_["init_from"] = InitFrom(**fields_["init_from"])
            return cls(inputs=inputs, **fields_)
        except TypeError as error:  # a required key missing, or an unknown init_from key
            raise ConfigError(f"{where}: {error}") from None

    # -- derived values -----------------------------------------------------------------------
    @property
    def max_length(self) -> int:
        return self.inputs.max_length

    @property
    def model_options(self) -> ModelOptions:
        names = [f.name for f in dataclasses.fields(ModelOptions)]
        return ModelOptions(**{name: getattr(self, name) for name in names})

    @property
    def job(self) -> CellOptions:
        """The options every seed of the cell's job shares (no seed)."""
        return self._copy_with_seed(UNSET)

    def with_seed(self, seed: int) -> CellOptions:
        return self._copy_with_seed(int(seed))

    def _copy_with_seed(self, seed) -> CellOptions:
        # a field copy: dataclasses.replace re-runs __init__, ~30,000 times per workflow read
        new = object.__new__(CellOptions)
        new.__dict__.update(self.__dict__)
        new.__dict__["seed"] = seed
        return new

    @property
    def selection(self) -> str:
        """How the evaluation is selected: `last` when dev is trained on, else `select`."""
        return "last" if self.train_on == "train+dev" else self.select

    @property
    def cell_id(self) -> str:
        """model/task/recipe/hparams/seedN (a job's options: without the seed), for logs."""
        job = f"{self.model}/{self.task}/{self.recipe}/{self.hparams}"
        return job if self.seed is UNSET else f"{job}/seed{self.seed}"

    def replace(self, **changes) -> CellOptions:
        return dataclasses.replace(self, **changes)


def options_json(options: dict) -> str:
    """The canonical text of serialised options (sorted keys, no spaces)."""
    return json.dumps(options, sort_keys=True, separators=(",", ":"))


def defaults() -> dict[str, Any]:
    """The recipe defaults, as a recipe's keys (what a config's `defaults` overrides)."""
    return dict(_DEFAULTS)


def _recipe_defaults() -> dict[str, Any]:
    skip = {"model", "model_source", "task", "recipe", "hparams", "code_version", "inputs"}
    out = {
        f.name: f.default
        for f in dataclasses.fields(CellOptions)
        if f.name not in skip and f.default is not UNSET
    }
    out.update(
        (f.name, f.default) for f in dataclasses.fields(InputOptions) if f.name != "max_length"
    )
    return out


# Read once: expansion builds thousands of options per workflow read.
_DEFAULTS = _recipe_defaults()
_KNOWN = frozenset(f.name for f in dataclasses.fields(CellOptions)) - {"inputs"}
