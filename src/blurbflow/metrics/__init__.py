"""Metrics (docs/metrics.md): pure functions, no torch; every score is ×100 and higher is better."""

from blurbflow.metrics.blurb import BLURB_TYPES, blurb_label, blurb_score, types_present
from blurbflow.metrics.chance import chance_baseline
from blurbflow.metrics.scores import (
    METRICS,
    accuracy,
    also_reported,
    compute_metric,
    entity_f1,
    hoc_macro_f1,
    hoc_micro_f1,
    macro_f1,
    micro_f1,
    pearson,
    pico_macro_f1,
    positive_f1,
    relaxed_entity_f1,
)

__all__ = [
    "BLURB_TYPES",
    "METRICS",
    "accuracy",
    "also_reported",
    "blurb_label",
    "blurb_score",
    "chance_baseline",
    "compute_metric",
    "entity_f1",
    "hoc_macro_f1",
    "hoc_micro_f1",
    "macro_f1",
    "micro_f1",
    "pearson",
    "pico_macro_f1",
    "positive_f1",
    "relaxed_entity_f1",
    "types_present",
]
