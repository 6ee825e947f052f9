"""Layer surgery for the layer-specific recipes (docs/recipes.md): freeze, re-initialise, remove the
encoder's layers and build layer-wise learning-rate groups.

The layout is read from the loaded modules, not the model name: BiomedELECTRA checkpoints are
tagged `bert` on the hub. BERT, ELECTRA and RoBERTa keep `embeddings` and `encoder.layer`.
"""

from __future__ import annotations

import torch
from torch import nn


class UnsupportedLayout(ValueError):
    pass


def encoder_parts(model: nn.Module) -> tuple[nn.Module, nn.ModuleList, nn.Module | None]:
    """(embeddings, encoder layers bottom-up, pooler or None) of a BERT-like model."""
    base = model.base_model
    encoder = getattr(base, "encoder", None)
    layers = getattr(encoder, "layer", None)
    embeddings = getattr(base, "embeddings", None)
    kind = type(base).__name__
    if hasattr(encoder, "albert_layer_groups"):
        raise UnsupportedLayout(_shared_layers(kind, base.config))
    if not isinstance(layers, nn.ModuleList) or embeddings is None:
        raise UnsupportedLayout(
            f"{kind}: layer surgery needs `embeddings` and an `encoder.layer` list (BERT, ELECTRA, "
            f"RoBERTa); use a recipe without {SURGERY_OPTIONS} for this model"
        )
    return embeddings, layers, getattr(base, "pooler", None)


SURGERY_OPTIONS = "freeze_lower/layerwise_lr_decay/reinit_top/remove_top"


def _shared_layers(kind: str, config) -> str:
    depth = getattr(config, "num_hidden_layers", "?")
    groups = getattr(config, "num_hidden_groups", 1)
    return (
        f"{kind}: ALBERT shares its layer weights across depths ({depth} layers computed by "
        f"{groups} shared layer group{'s' if groups != 1 else ''}), so there is no separate "
        "top or lower layer to re-initialise, freeze, remove or give its own learning rate: any "
        f"such change would hit every depth at once. Use a recipe without {SURGERY_OPTIONS} "
        "for this model"
    )


def resolve_freeze(freeze_lower, num_layers: int) -> int:
    return num_layers // 2 if freeze_lower == "half" else int(freeze_lower or 0)


def freeze_lower(model: nn.Module, count) -> int:
    """Freeze the embeddings and the lower `count` layers; returns the number of layers frozen."""
    if not count:  # no surgery: any layout (ALBERT's too) is fine
        return 0
    embeddings, layers, _ = encoder_parts(model)
    n = resolve_freeze(count, len(layers))
    if n == 0:
        return 0
    if n > len(layers):
        raise ValueError(f"freeze_lower={n} but the model has only {len(layers)} layers")
    for module in [embeddings, *layers[:n]]:
        for param in module.parameters():
            param.requires_grad_(False)
    return n


def _reinit_module(module: nn.Module, std: float, generator: torch.Generator) -> None:
    for sub in module.modules():
        if isinstance(sub, nn.Linear):
            with torch.no_grad():
                sub.weight.copy_(torch.randn(sub.weight.shape, generator=generator) * std)
                if sub.bias is not None:
                    sub.bias.zero_()
        elif isinstance(sub, nn.LayerNorm):
            with torch.no_grad():
                sub.weight.fill_(1.0)
                sub.bias.zero_()


def reinit_top(model: nn.Module, count: int, seed: int) -> None:
    """Re-draw the top `count` layers (and the pooler, where the model has one) from
    N(0, initializer_range), zero biases, reset LayerNorm to 1/0."""
    if not count:
        return
    _, layers, pooler = encoder_parts(model)
    if count > len(layers):
        raise ValueError(f"reinit_top={count} but the model has only {len(layers)} layers")
    std = float(getattr(model.config, "initializer_range", 0.02))
    generator = torch.Generator().manual_seed(seed)
    for module in [*layers[len(layers) - count :], *([pooler] if pooler is not None else [])]:
        _reinit_module(module, std, generator)


def remove_top(model: nn.Module, count: int) -> None:
    """Delete the top `count` encoder layers before fine-tuning (Tinn et al. Table 8)."""
    if not count:
        return
    _, layers, _ = encoder_parts(model)
    if count >= len(layers):
        raise ValueError(f"remove_top={count} would leave no layer of {len(layers)}")
    model.base_model.encoder.layer = nn.ModuleList(list(layers)[: len(layers) - count])
    model.config.num_hidden_layers = len(layers) - count


def _no_decay(name: str) -> bool:
    return name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name


def parameter_groups(
    model: nn.Module, lr: float, weight_decay: float, decay: float | None
) -> list[dict]:
    """Optimizer groups: weight decay off for biases and LayerNorm; with layer-wise decay d the
    head (and pooler) get lr, encoder layer l of L gets lr·d^(L+1−l), embeddings lr·d^(L+2)
    (ELECTRA's convention as used by Tinn et al.: the top layer gets lr·d²)."""
    scale: dict[str, float] = {}
    if decay:
        embeddings, layers, _ = encoder_parts(model)
        n_layers = len(layers)
        owner = {id(p): n for n, p in model.named_parameters()}
        for param in embeddings.parameters():
            scale[owner[id(param)]] = decay ** (n_layers + 2)
        for index, layer in enumerate(layers):
            for param in layer.parameters():
                scale[owner[id(param)]] = decay ** (n_layers + 1 - index)
    groups: dict[tuple[float, float], dict] = {}
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        group_lr = lr * scale.get(name, 1.0)
        wd = 0.0 if _no_decay(name) else weight_decay
        group = groups.setdefault(
            (group_lr, wd), {"params": [], "names": [], "lr": group_lr, "weight_decay": wd}
        )
        group["params"].append(param)
        group["names"].append(name)
    return list(groups.values())
