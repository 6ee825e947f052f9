"""Extractive question answering: SQuAD-format examples, overlapping windows over long contexts,
n-best span decoding, a span head on any `AutoModel` encoder, and the SQuAD and BioASQ factoid
metrics.

    examples (read_squad) -> make_windows -> model -> SpanHead logits -> decode_predictions
    -> squad_scores / factoid_scores (BioASQ: factoid_answers first)

Names load lazily, so that the data step (parsers) does not import torch.
"""

from __future__ import annotations

from importlib import import_module

_WHERE = {
    "read_squad": "squad",
    "Windows": "windows",
    "make_windows": "windows",
    "nbest_spans": "decode",
    "decode_predictions": "decode",
    "factoid_answers": "decode",
    "SpanHead": "head",
    "SpanModel": "head",
    "SpanOutput": "head",
    "span_settings": "settings",
    "span_loss": "head",
    "normalize_answer": "metrics",
    "squad_scores": "metrics",
    "factoid_scores": "metrics",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'blurbflow.qa' has no attribute {name!r}")
    return getattr(import_module(f"blurbflow.qa.{_WHERE[name]}"), name)
