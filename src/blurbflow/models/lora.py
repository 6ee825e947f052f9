"""Large models (recipe options `lora`, `gradient_checkpointing`, `frozen_dtype`;
blurbflow.options.lora): applied to the model `load_for_task` built, after layer surgery.

- `lora`: the `peft` library's LoRA (Hu et al. 2021). Every pretrained weight is frozen; low-rank
  adapters A (r × in) and B (out × r, zero at the start) are added to the encoder's linear layers
  named by `target_modules` (`all-linear`: every one), and the task head — the modules of the
  model beside its encoder: transformers' `classifier`/`score` (and RoBERTa's dense), or
  blurbflow's own head — is trained in full (peft's `modules_to_save`). Nothing else trains.
- `gradient_checkpointing`: the encoder recomputes its activations in the backward pass
  (non-reentrant, so frozen inputs need no gradient).
- `frozen_dtype: bf16`: on a GPU, the frozen weights are held in bfloat16 (a 7B base: 14 GB, not
  28); the trained ones stay fp32 for the optimizer. Autocast (`precision`) computes with both.
  On the CPU every weight stays fp32, as `precision` computes there.

A kept model (`keep_model`) of a LoRA cell is the adapter and the head (`adapter_config.json`,
`adapter_model.safetensors`, saved by peft) with the task's `config.json` (labels) beside them;
its adapter config names the base model as the config's model entry gives it (`model_source`,
`revision`), so `load_kept` (or peft's own loading) rebuilds the fine-tuned model."""

from __future__ import annotations

import re
from pathlib import Path

from blurbflow.options.lora import ALL_LINEAR

ADAPTER_WEIGHTS = "adapter_model.safetensors"  # peft's file name: a kept LoRA model's weights


def head_names(model) -> list[str]:
    """The model's modules beside its encoder that hold weights: the task head."""
    encoder = model.base_model
    return [
        name
        for name, child in model.named_children()
        if child is not encoder and any(True for _ in child.parameters())
    ]


def encoder_linear_names(model) -> list[str]:
    """The last name part of every linear layer of the encoder (`query`, `q_proj`, `dense` …)."""
    from torch import nn

    return sorted(
        {
            name.rsplit(".", 1)[-1]
            for name, module in model.base_model.named_modules()
            if isinstance(module, nn.Linear)
        }
    )


def lora_config(model, lora, token_level: bool | None):
    """peft's LoraConfig for the recipe's `lora` on this model (ValueError naming the encoder's
    linear layers when `target_modules` names another)."""
    from peft import LoraConfig, TaskType

    available = encoder_linear_names(model)
    if lora.target_modules == ALL_LINEAR:
        targets = available
    else:
        targets = list(lora.target_modules)
        unknown = [name for name in targets if name not in available]
        if unknown:
            raise ValueError(
                f"lora.target_modules: {', '.join(unknown)} name no linear layer of the "
                f"{type(model.base_model).__name__} encoder; its linear layers: "
                f"{', '.join(available)}"
            )
    heads = head_names(model)
    task_type = None  # blurbflow's own heads and the span head: a plain PeftModel
    if type(model).__module__.startswith("transformers."):
        task_type = TaskType.TOKEN_CLS if token_level else TaskType.SEQ_CLS
    return LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=targets,
        exclude_modules=f"({'|'.join(map(re.escape, heads))})(\\..*)?" if heads else None,
        modules_to_save=heads,
        task_type=task_type,
    )


def apply_large_options(model, options, token_level: bool | None = None, device=None):
    """The model with the cell's `lora`, `gradient_checkpointing` and `frozen_dtype` applied
    (unchanged when none is set). `token_level`: the task tags tokens (peft's task type)."""
    if options.gradient_checkpointing:
        non_reentrant = {"use_reentrant": False}  # frozen inputs need no gradient
        model.base_model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=non_reentrant)
    if options.lora:
        from peft import get_peft_model

        model = get_peft_model(model, lora_config(model, options.lora, token_level))
        # the base as the config's model entry names it (peft took the local folder's path)
        model.peft_config["default"].base_model_name_or_path = options.model_source
        model.peft_config["default"].revision = options.revision or None
    if options.frozen_dtype == "bf16" and device is not None and device.type == "cuda":
        import torch

        for param in model.parameters():
            if not param.requires_grad:
                param.data = param.data.to(torch.bfloat16)
    return model


def trainable_names(model) -> list[str]:
    """The names of the parameters the optimizer updates."""
    return [name for name, param in model.named_parameters() if param.requires_grad]


def is_adapter(model) -> bool:
    from peft import PeftModel

    return isinstance(model, PeftModel)


def save_pretrained(model, folder: Path) -> None:
    """A kept model: the whole model (model.safetensors, config.json), or a LoRA model's adapter
    and head with the task's config.json (labels) beside them."""
    model.save_pretrained(folder, safe_serialization=True)
    if getattr(model, "peft_config", None) is not None:
        model.base_model.model.config.save_pretrained(folder)


def load_kept(folder: Path, auto_class=None):
    """A kept LoRA model, rebuilt with peft: its base model (the adapter config's
    `base_model_name_or_path` at its `revision`) loaded by `auto_class` (default: the config's
    architecture's AutoModelFor… class) with the kept config.json (labels), then the adapter and
    head. Transformers' own heads only: blurbflow's heads are modules of its own."""
    from peft import PeftConfig, PeftModel
    from transformers import AutoConfig, AutoModelForSequenceClassification

    peft_config = PeftConfig.from_pretrained(str(folder))
    config = AutoConfig.from_pretrained(str(folder))
    auto = auto_class or AutoModelForSequenceClassification
    base = auto.from_pretrained(
        peft_config.base_model_name_or_path, config=config, revision=peft_config.revision
    )
    return PeftModel.from_pretrained(base, str(folder)).eval()
