"""The attention implementation a job's models load with (the model entry's
`attn_implementation`: docs/models.md). Not a cell option: on the CPU, sdpa and eager give the
same logits, loss and gradients up to float rounding (max |difference| ≤ 1e-6 after 30 training
steps of tiny BERT, RoBERTa and ModernBERT models, tests/test_attention.py), the way thread
counts do, so changing it re-runs nothing; result.json records the implementation that ran.

`sdpa` (the default): torch's scaled_dot_product_attention where the architecture has it,
else transformers' fallback, eager (DeBERTa-v2 has no sdpa); `flash_attention_2`: the
flash-attn package's kernels (a CUDA GPU and the package installed); `eager`: plain matmuls."""

from __future__ import annotations

import importlib.util

IMPLEMENTATIONS = ("sdpa", "flash_attention_2", "eager")
_requested: str | None = None  # None: transformers' default (sdpa where the model has it)


def use(name: str | None) -> None:
    """Set the implementation the job's models load with (steps.finetune, from the model entry);
    ValueError naming the fix when it cannot run here."""
    global _requested
    if name is not None and name not in IMPLEMENTATIONS:
        raise ValueError(
            f"attn_implementation: unknown {name!r}; use one of {', '.join(IMPLEMENTATIONS)}"
        )
    if name == "flash_attention_2":
        import torch

        if importlib.util.find_spec("flash_attn") is None or not torch.cuda.is_available():
            raise ValueError(
                "attn_implementation: flash_attention_2 needs a CUDA GPU and the flash-attn "
                "package (`pip install flash-attn`), and this job has "
                f"{'no GPU' if not torch.cuda.is_available() else 'no flash-attn'}; use sdpa"
            )
    _requested = None if name == "sdpa" else name


def requested() -> str | None:
    return _requested


def load_kwargs() -> dict:
    """`from_pretrained` keyword arguments: none for the default (transformers picks sdpa where
    the architecture supports it, else eager), else `attn_implementation`."""
    return {} if _requested is None else {"attn_implementation": _requested}


def used(model) -> str | None:
    """The implementation the loaded model runs (its config's), for result.json: the
    padding-free path's is sdpa on jagged tensors (blurbflow.models.padding_free), recorded
    as sdpa (result.json's `batch_shapes` says padding_free)."""
    from blurbflow.models.padding_free import NAME

    config = getattr(model, "config", None)
    found = getattr(config, "_attn_implementation", None)
    return "sdpa" if found == NAME else found
