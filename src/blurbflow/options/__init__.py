"""A cell's options as one typed, frozen object: everything its result depends on.

`CellOptions` is built once, when the config expands into cells (blurbflow.config), and passed
whole to everything below the workflow steps: the engine, the tokenization inputs, identity,
verification and the `hparams_from` hand-over (`dataclasses.replace`). Every default is written
once, on its field (Gu et al. 2021's fine-tuning recipe: the original BERT optimizer, Adam
without bias correction, epsilon 1e-6; a config's `defaults` and recipes override them).

The serialised form (`to_dict`) is the flat mapping that the finetune rule's params, result.json
and cells.parquet carry. Options that join a cell only when set (a model's `revision`, early
stopping's `patience`, …) default to `UNSET` and are left out of it, so cells that do not set
them keep their params; `from_dict` rejects any key it does not know. Each recipe option's
help, allowed values and schema are its field's metadata (blurbflow.options.fields._option).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from blurbflow.options.fields import (  # noqa: F401 (the groups are imported from here)
    UNSET,
    InitFrom,
    InputOptions,
    ModelOptions,
    S,
    _about,
    _option,
    _optional,
    recipe_fields,
)
from blurbflow.options.lora import FROZEN_DTYPES, LORA_SCHEMA, LoRA
from blurbflow.options.rules import check_options  # noqa: F401 (imported from here)
from blurbflow.util.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class CellOptions:
    # where the cell sits
    model: str = _about("the config's name of the model")
    model_source: str = _about("the model's local folder, hub id or url")
    task: str = _about("the task (a cross-validation fold: the fold's task)")
    recipe: str = _about("the recipe's name")
    hparams: str = _about("the grid point's folder (`lr3e-05-bs16`, `selected`, `on-…`)")
    seed: int = _optional("a cell's seed; a job (all its seeds) has none")
    code_version: str = field(default="1", metadata={"help": "the config's `code_version`"})
    inputs: InputOptions = _about("the options that change tokenization")
    # the recipe (docs/recipes.md); help, choices and schema: blurbflow.options.fields._option
    epochs: int | None = _option(
        3, "training epochs, or a mapping task → epochs with `default`", schema=S.EPOCHS
    )
    lr: float | None = _option(5e-5, "peak learning rate, or a list (a grid)", schema=S.LR)
    batch_size: int | None = _option(32, "batch size, or a list (a grid)", schema=S.BATCH)
    warmup_ratio: float = _option(
        0.1, "share of the steps the learning rate warms up over, then decays to 0", schema=S.UNIT
    )
    weight_decay: float = _option(0.01, "AdamW's decoupled weight decay", schema=S.NONNEG)
    dropout: float = _option(0.1, "dropout of the encoder and the head", schema=S.UNIT)
    adam_bias_correction: bool = _option(
        False, "Adam's bias correction (off in BERT's optimizer; Tinn et al. turn it on)", S.BOOL
    )
    adam_beta1: float = _option(0.9, "Adam's beta1", schema=S.BETA)
    adam_beta2: float = _option(0.999, "Adam's beta2", schema=S.BETA)
    adam_epsilon: float = _option(1e-6, "Adam's epsilon", schema=S.POSITIVE)
    max_grad_norm: float | None = _option(
        1.0, "gradients clipped to this norm (null: no clipping)", schema=S.NORM
    )
    freeze_lower: int | str | None = _option(
        0, "freeze the embeddings and lowest N layers (`half`: half), or a list", schema=S.FREEZE
    )
    layerwise_lr_decay: float | None = _option(
        None, "layer-wise lr decay d in (0, 1] (null: off), or a list (a grid)", schema=S.DECAY
    )
    reinit_top: int | None = _option(
        0, "top layers re-initialised, or a list of counts (a grid)", schema=S.REINIT
    )
    remove_top: int = _option(0, "top layers dropped before fine-tuning", schema=S.COUNT)
    select: str = _option(
        "best_dev",
        "which evaluation is the cell's: the best on dev, or the last (train+dev forces last)",
        choices=("best_dev", "last"),
    )
    eval_batch_size: int = _option(64, "batch size of dev and test scoring", schema=S.SIZE)
    train_on: str = _option(
        "train",
        "the training split(s); `train+dev` holds nothing out, so selection is `last`",
        choices=("train", "train+dev"),
    )
    train_subsample: int | None = _option(
        None, "N random training instances, the same for every seed (null: all)", S.SOME
    )
    subsample_seed: int = _option(0, "seed of the train_subsample draw", schema=S.COUNT)
    head: str = _option(
        "linear",
        "`linear`: the architecture's own transformers head (RoBERTa's, ELECTRA's, DeBERTa's "
        "add a dense layer); `cls_linear`: one new linear layer on the [CLS] state (BERT: its "
        "pooler's output) or each token; `bilstm`: a BiLSTM before the linear layer",
        choices=("linear", "cls_linear", "bilstm"),
    )
    re_pooling: str = _option(
        "cls",
        "RE features: [CLS], max or mean (`mention`) of each entity's tokens, or the entity "
        "start tokens (needs re_input: markers)",
        choices=("cls", "max", "mention", "entity_start"),
    )
    batching: str = _option(
        "bucketed",
        "how a random batch is computed, the batches the same: `bucketed` in length-sorted "
        "micro-batches on the CPU (token tasks: packed rows) and in fp32 on CUDA, one padded pass "
        "on CUDA in bf16 and fp16; `random` one padded pass (docs/engine.md)",
        choices=("bucketed", "random"),
    )
    precision: str = _option(
        "bf16",
        "GPU arithmetic: bf16 where native (else fp16 with a gradient scaler), fp16 with a "
        "scaler, or fp32 (no TF32); CPU is fp32",
        choices=("bf16", "fp16", "fp32"),
    )
    # joined only when set
    pooling: str = _option(
        UNSET,
        "sequence tasks read at [CLS]: `cls` or `mean` (of the real tokens' last states) "
        "instead of the architecture's own (BERT's pooler, ModernBERT's `classifier_pooling`)",
        choices=("cls", "mean"),
    )
    eval_every_steps: int | None = _option(
        UNSET, "score dev and test every N optimizer steps (and at the end), not per epoch", S.SOME
    )
    patience: int | None = _option(
        UNSET, "early stopping: stop after N evaluations without a better dev score", S.SOME
    )
    revision: str = _optional("the model entry's settings (blurbflow.models.prefetch)")
    cased: bool = _optional("the model entry's `cased`")
    add_prefix_space: bool = _optional("the model entry's `add_prefix_space`")
    trust_remote_code: bool = _optional("the model entry's `trust_remote_code`")
    untrained_pooler: bool = _optional("the model entry's `untrained_pooler`")
    sha256: str = _optional("a URL model's archive digest")
    subfolder: str = _optional("the model folder inside a URL model's archive")
    hparams_from: tuple[str, ...] = _option(
        UNSET,
        "recipe(s) whose train-only cells choose, per model and task on dev, this recipe's lr, "
        "batch size, technique settings and epochs (it runs once, in the folder `selected`)",
        schema=S.NAMES,
    )
    hparams_models: tuple[str, ...] = _optional("the reference models that chose the point")
    hparams_task: str = _optional("a cross-validation fold: its tune fold")
    selection_file: str = _optional("the file the hyperparameter selection is written to")
    selected_from: str = _optional("recipe/hparams the selection chose (set by the job)")
    init_from: InitFrom = _option(
        UNSET,
        "start from the fine-tuned weights of another recipe's cell of the same model: "
        "{task, recipe (one hparams job), seed: same or a seed}",
        schema=S.INIT_FROM,
    )
    keep_weights: bool = _optional("a source of init_from saves its weights (set by the workflow)")
    keep_model: bool = _option(
        UNSET,
        "every seed keeps its fine-tuned model (the reported evaluation's) as a Hugging Face "
        "folder seed{N}/model/ with its tokenizer and a model card",
        S.BOOL,
    )
    lora: LoRA = _option(
        UNSET, "LoRA (peft): adapters and head trained, weights frozen", LORA_SCHEMA
    )
    gradient_checkpointing: bool = _option(
        UNSET, "recompute activations in the backward pass: less memory, slower steps", S.BOOL
    )
    frozen_dtype: str = _option(
        UNSET, "frozen weights held in bf16 on the GPU (half the memory)", choices=FROZEN_DTYPES
    )

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
            elif f.name in ("init_from", "lora"):
                out[f.name] = value.to_dict()
            elif f.name in ("hparams_from", "hparams_models"):
                out[f.name] = list(value)  # as the config and result.json write them
            else:
                out[f.name] = value
        return out

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
            if isinstance(fields_.get("lora"), dict):
                fields_["lora"] = LoRA.from_dict(fields_["lora"], f"{where}.lora")
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


def recipe_options() -> dict[str, dict]:
    """Every key a recipe may set → {help, schema, choices?, default?}, in the schema's order."""
    return recipe_fields(CellOptions, InputOptions)


def choices(name: str) -> tuple[str, ...]:
    """The allowed values of a recipe option (its field's metadata)."""
    return recipe_options()[name]["choices"]


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
