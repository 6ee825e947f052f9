"""Chance baselines: the score of the best trivial (input-ignoring) predictor.

The report draws them next to every task so an unstable run that collapsed to a constant
prediction is recognisable. The trivial predictor is chosen on the training labels (it must
not look at the evaluation labels) and then scored on the evaluation labels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from blurbflow.metrics.scores import compute_metric
from blurbflow.metrics.span import METRICS as SPAN_METRICS
from blurbflow.metrics.span import span_chance
from blurbflow.tasks.registry import TaskSpec

MULTI_LABEL = ("hoc_micro_f1", "hoc_macro_f1")  # a set of labels per instance (HoC)


def _all_outside(eval_gold: Sequence) -> list:
    """All-`O` tagging with the shape of the gold tags (per sentence or flat)."""
    if len(eval_gold) and not isinstance(eval_gold[0], str):
        return [["O"] * len(sentence) for sentence in eval_gold]
    return ["O"] * len(eval_gold)


def _constant_candidates(spec: TaskSpec, train_gold: Sequence) -> list:
    """Every constant prediction worth trying for the task's metric."""
    if spec.metric in MULTI_LABEL:
        label_sets = Counter(frozenset(labels) for labels in train_gold)
        candidates = [frozenset()] + [frozenset([label]) for label in spec.labels]
        if label_sets:
            candidates.append(label_sets.most_common(1)[0][0])
        return [sorted(c) for c in candidates]
    # Single-label tasks: every label alone. The train majority is among them (accuracy's
    # chance); for F1 metrics a frequent positive label can beat the (negative) majority.
    seen = sorted({str(g) for g in train_gold}) or [str(label) for label in spec.labels]
    counts = Counter(str(g) for g in train_gold)
    return sorted(seen, key=lambda label: -counts[label])  # majority first: wins ties


def chance_baseline(spec: TaskSpec, train_gold: Sequence, eval_gold: Sequence) -> float:
    """The metric (×100) of the best constant predictor chosen on `train_gold`, on `eval_gold`.

    NER/PICO: all-`O` (0). STS: a constant has no Pearson correlation (0). HoC: the best of
    the empty set, each hallmark alone and the most frequent label set. Classification: the best
    single label — the train majority for accuracy; for RE micro F1 the majority is the negative
    label (0) unless a positive label scores higher; for GAD, always-"1" versus the majority.
    Extractive QA: `blurbflow.metrics.span.span_chance` (a computed value, not 0).
    """
    if spec.metric in ("entity_f1", "relaxed_entity_f1", "pico_macro_f1"):
        return compute_metric(spec, eval_gold, _all_outside(eval_gold))
    if spec.metric == "pearson":
        return 0.0
    if spec.metric in SPAN_METRICS:  # extractive QA: "no answer" or the frequent answers
        return span_chance(lambda g, p: compute_metric(spec, g, p), train_gold, eval_gold)
    if not len(eval_gold):
        raise ValueError(f"task {spec.name}: no evaluation labels for the chance baseline")
    reference = train_gold if len(train_gold) else eval_gold
    if spec.metric not in MULTI_LABEL:  # labels may arrive as ints (GAD's 0/1) from parquet
        reference, eval_gold = [str(g) for g in reference], [str(g) for g in eval_gold]
    candidates = _constant_candidates(spec, reference)
    best = max(candidates, key=lambda c: compute_metric(spec, reference, [c] * len(reference)))
    return compute_metric(spec, eval_gold, [best] * len(eval_gold))
