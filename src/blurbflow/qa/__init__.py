"""Extractive question answering: overlapping windows over long contexts, n-best span decoding,
a span head on any `AutoModel` encoder, and the SQuAD and BioASQ factoid metrics. SQuAD-format
files are read by the data step (`blurbflow.data.parsers.squad.read_squad`); qa imports nothing
of blurbflow.data.

    examples (prepared span rows) -> make_windows -> model -> SpanHead logits
    -> decode_predictions -> squad_scores / factoid_scores (BioASQ: factoid_answers first)

Names load lazily, so that the metrics (decode, metrics) do not import torch (head).
"""

from __future__ import annotations

from importlib import import_module

_WHERE = {
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
