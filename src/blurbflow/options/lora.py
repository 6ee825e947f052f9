"""The recipe options for large models (docs/recipes.md, "LoRA and large models"): `lora`
(parameter-efficient fine-tuning with the `peft` library: the pretrained weights frozen,
low-rank adapters and the task head trained), `gradient_checkpointing` and `frozen_dtype`.
Torch-free: the config layer builds and checks them; blurbflow.models.lora applies them.

`lora` is part of a cell's identity as its full mapping {r, alpha, dropout, target_modules}
(defaults filled in), so `lora: {r: 8}` and `lora: {r: 8, alpha: 16}` are the same cell. A
cell without `lora` serialises as before (the option is left out)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from blurbflow.util.errors import ConfigError

ALL_LINEAR = "all-linear"  # every linear layer of the encoder (peft's name), never the head
FROZEN_DTYPES = ("fp32", "bf16")
# layer surgery that reads or changes the encoder's own layers: no meaning under frozen LoRA
LORA_EXCLUDES = ("freeze_lower", "layerwise_lr_decay", "reinit_top")

LORA_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "r": {"type": "integer", "minimum": 1, "description": "the adapters' rank (default 8)"},
        "alpha": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "the update is scaled by alpha / r (default 16)",
        },
        "dropout": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "dropout on the adapters' input (default 0.05)",
        },
        "target_modules": {
            "oneOf": [
                {"const": ALL_LINEAR},
                {"type": "array", "minItems": 1, "items": {"type": "string"}},
            ],
            "description": "`all-linear` (default: every linear layer of the encoder) or the "
            "names of the encoder's linear layers, e.g. [q_proj, v_proj] (Llama) or [query, "
            "value] (BERT)",
        },
    },
}


@dataclass(frozen=True, kw_only=True)
class LoRA:
    """A recipe's `lora` mapping, with its defaults (Hu et al. 2021's r 8; alpha 2r)."""

    r: int = 8
    alpha: float = 16.0
    dropout: float = 0.05
    target_modules: str | tuple[str, ...] = ALL_LINEAR

    def __post_init__(self):
        object.__setattr__(self, "r", int(self.r))
        object.__setattr__(self, "alpha", float(self.alpha))
        object.__setattr__(self, "dropout", float(self.dropout))
        if not isinstance(self.target_modules, str):  # a tuple, so that options hash
            object.__setattr__(self, "target_modules", tuple(self.target_modules))

    @classmethod
    def from_dict(cls, given: dict[str, Any], where: str = "lora") -> LoRA:
        unknown = sorted(set(given) - {"r", "alpha", "dropout", "target_modules"})
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}")
        return cls(**given)

    def to_dict(self) -> dict[str, Any]:
        modules = self.target_modules
        return {
            "r": self.r,
            "alpha": self.alpha,
            "dropout": self.dropout,
            "target_modules": modules if isinstance(modules, str) else list(modules),
        }


def check_large(options, where: str) -> None:
    """The rules of `lora` and `frozen_dtype` with the other options (run with
    blurbflow.options.rules.check_options when the config is read)."""
    if options.lora:
        clash = [name for name in LORA_EXCLUDES if getattr(options, name)]
        if clash:
            raise ConfigError(
                f"{where}.lora: {', '.join(clash)} change(s) the encoder's own layers, which "
                "LoRA keeps frozen; remove them from the recipe, or `lora`"
            )
    if options.frozen_dtype == "bf16" and options.precision == "fp32":
        raise ConfigError(
            f"{where}.frozen_dtype: bf16 frozen weights need mixed precision (precision: bf16 "
            "or fp16) to compute with the fp32 activations; got precision: fp32"
        )
