"""The word embeddings' gradient kept sparse through a batch's micro-batches on the CPU, and
made dense once per step (train/fit.py's Steps; why: its module note)."""

from __future__ import annotations

import torch


def sparse_embeddings(model, device: torch.device, batching_mode: str):
    """The input word embeddings' weight when its gradient is kept sparse through a batch's
    passes, else None. Only where nothing else uses the weight (no tied output layer)."""
    if device.type != "cpu" or batching_mode != "bucketed":
        return None
    try:
        embeddings = model.get_input_embeddings()
    except (AttributeError, NotImplementedError):
        return None
    if not isinstance(embeddings, torch.nn.Embedding) or embeddings.max_norm is not None:
        return None
    weight = embeddings.weight
    uses = sum(p is weight for _, p in model.named_parameters(remove_duplicate=False))
    if not weight.requires_grad or uses != 1:
        return None
    embeddings.sparse = True
    return weight


def densify(weight: torch.Tensor | None, dense: torch.Tensor | None) -> torch.Tensor | None:
    """`weight`'s sparse gradient summed into `dense`, a buffer reused by every step (a fresh
    vocabulary × width tensor per step would be paged in again each time); returns the buffer."""
    grad = None if weight is None else weight.grad
    if grad is None or not grad.is_sparse:
        return dense
    grad = grad.coalesce()
    if dense is None:
        dense = torch.zeros_like(weight)
    else:
        dense.zero_()
    weight.grad = dense.index_add_(0, grad.indices()[0], grad.values())
    return dense
