"""BLURB metrics (docs/metrics.md): pure functions of gold and predicted labels, each ×100.

Every metric here is "higher is better"; hyperparameter selection and the tables rely on that.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Iterable, Sequence

from blurbflow.metrics.span import METRICS as SPAN_METRICS
from blurbflow.tasks.registry import TaskSpec
from blurbflow.tasks.types import metric_family


def _check_lengths(gold: Sequence, pred: Sequence) -> None:
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} items but pred has {len(pred)}")


def _f1(tp: int, fp: int, fn: int) -> float:
    """F1 ×100 from counts; 0 when there is nothing to find and nothing was predicted."""
    denominator = 2 * tp + fp + fn
    return 100.0 * 2 * tp / denominator if denominator else 0.0


def entity_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """NER: entity-level micro F1 with seqeval's default (conlleval) chunking of B/I/O sequences.

    Conlleval semantics: an `I` that follows `O` starts an entity, as in the BLURB scripts.
    """
    from seqeval.metrics import f1_score

    _check_lengths(gold, pred)
    for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted tags")
    with warnings.catch_warnings():  # seqeval warns (and returns 0) when no entity exists
        warnings.simplefilter("ignore")
        return 100.0 * float(f1_score([list(g) for g in gold], [list(p) for p in pred]))


def relaxed_entity_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """NER, lenient: entity F1 where a predicted entity counts as correct when it overlaps a
    gold entity of the same type in the same sentence (Tinn et al., Table 11: "overlap counted
    as correct"). Precision is the share of predicted entities overlapping a gold one, recall
    the share of gold entities overlapped by a predicted one; entities chunked as `entity_f1`
    chunks them (conlleval)."""
    from seqeval.metrics.sequence_labeling import get_entities

    _check_lengths(gold, pred)
    found = predicted = hit = total = 0
    for i, (g, p) in enumerate(zip(gold, pred, strict=True)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted tags")
        gold_spans, pred_spans = get_entities(list(g)), get_entities(list(p))

        def overlaps(a, spans):
            return any(a[0] == b[0] and a[1] <= b[2] and b[1] <= a[2] for b in spans)

        predicted += len(pred_spans)
        hit += sum(overlaps(a, gold_spans) for a in pred_spans)
        total += len(gold_spans)
        found += sum(overlaps(b, pred_spans) for b in gold_spans)
    precision = hit / predicted if predicted else 0.0
    recall = found / total if total else 0.0
    if not precision + recall:
        return 0.0
    return 100.0 * 2 * precision * recall / (precision + recall)


def _flatten(tags: Sequence) -> list[str]:
    """Accept PICO tags per sentence (list of lists) or already flattened."""
    if len(tags) and not isinstance(tags[0], str):
        return [t for sentence in tags for t in sentence]
    return list(tags)


def pico_macro_f1(
    gold: Sequence, pred: Sequence, labels: Iterable[str] = ("I-PAR", "I-INT", "I-OUT")
) -> float:
    """PICO: word-level macro F1 over the PICO labels (`O` is not one of them)."""
    gold_tags, pred_tags = _flatten(gold), _flatten(pred)
    _check_lengths(gold_tags, pred_tags)
    per_label = []
    for label in labels:
        tp = sum(g == label and p == label for g, p in zip(gold_tags, pred_tags, strict=True))
        fp = sum(g != label and p == label for g, p in zip(gold_tags, pred_tags, strict=True))
        fn = sum(g == label and p != label for g, p in zip(gold_tags, pred_tags, strict=True))
        per_label.append(_f1(tp, fp, fn))
    return sum(per_label) / len(per_label) if per_label else 0.0


def micro_f1(gold: Sequence[str], pred: Sequence[str], negative_label: str | None = None) -> float:
    """RE (ChemProt, DDI): micro F1 over every label except the negative one.

    A positive gold predicted as another label counts as both a false negative and a false
    positive, as in sklearn's `f1_score(labels=positives, average="micro")`.
    """
    _check_lengths(gold, pred)
    tp = sum(g == p and g != negative_label for g, p in zip(gold, pred, strict=True))
    fp = sum(p != negative_label and p != g for g, p in zip(gold, pred, strict=True))
    fn = sum(g != negative_label and p != g for g, p in zip(gold, pred, strict=True))
    return _f1(tp, fp, fn)


def positive_f1(gold: Sequence[str], pred: Sequence[str], positive_label: str = "1") -> float:
    """GAD: F1 of the positive class."""
    _check_lengths(gold, pred)
    pairs = [(str(g), str(p)) for g, p in zip(gold, pred, strict=True)]
    positive = str(positive_label)
    tp = sum(g == positive and p == positive for g, p in pairs)
    fp = sum(g != positive and p == positive for g, p in pairs)
    fn = sum(g == positive and p != positive for g, p in pairs)
    return _f1(tp, fp, fn)


def pearson(gold: Sequence[float], pred: Sequence[float]) -> float:
    """BIOSSES: Pearson correlation ×100.

    A constant prediction (a collapsed fine-tuning run) has no defined correlation; it scores 0,
    the same as the chance baseline, so such runs still enter means instead of turning them NaN.
    """
    from scipy.stats import pearsonr

    _check_lengths(gold, pred)
    if len(gold) < 2:
        raise ValueError("Pearson correlation needs at least 2 items")
    gold_values, pred_values = [float(g) for g in gold], [float(p) for p in pred]
    if len(set(pred_values)) == 1 or len(set(gold_values)) == 1:
        return 0.0
    return 100.0 * float(pearsonr(gold_values, pred_values).statistic)


def hoc_micro_f1(
    gold: Sequence[Iterable[str]], pred: Sequence[Iterable[str]], labels: Iterable[str] = ()
) -> float:
    """HoC: micro F1 over the hallmarks at abstract level.

    True/false positives and false negatives are pooled over every abstract × label cell, then
    one F1 is computed (LinkBERT's BLURB evaluation). BLUE instead averages an F1 per abstract;
    the two differ, so this choice is fixed here and documented (docs/metrics.md).
    `labels` restricts the scored labels (the 10 hallmarks); empty means every label seen.
    """
    _check_lengths(gold, pred)
    keep = set(labels)
    tp = fp = fn = 0
    for g, p in zip(gold, pred, strict=True):
        g, p = set(g), set(p)
        if keep:
            g, p = g & keep, p & keep
        tp += len(g & p)
        fp += len(p - g)
        fn += len(g - p)
    return _f1(tp, fp, fn)


def hoc_macro_f1(
    gold: Sequence[Iterable[str]], pred: Sequence[Iterable[str]], labels: Iterable[str] = ()
) -> float:
    """HoC, the other reading of Gu et al.'s "average micro F1 across the ten cancer hallmarks":
    each hallmark's own F1 over the abstracts (its true/false positives and false negatives),
    then the mean of those F1s. Recorded beside `hoc_micro_f1` (tasks.types.METRIC_FAMILIES).
    `labels`: the hallmarks averaged over (the 10); empty means every label seen. A hallmark
    neither gold nor predicted anywhere scores 0, as in `macro_f1`."""
    _check_lengths(gold, pred)
    pairs = [(set(g), set(p)) for g, p in zip(gold, pred, strict=True)]
    names = list(labels) or sorted({x for g, p in pairs for x in g | p})
    per_label = [
        _f1(
            sum(x in g and x in p for g, p in pairs),
            sum(x not in g and x in p for g, p in pairs),
            sum(x in g and x not in p for g, p in pairs),
        )
        for x in names
    ]
    return sum(per_label) / len(per_label) if per_label else 0.0


def macro_f1(gold: Sequence[str], pred: Sequence[str], labels: Iterable[str] = ()) -> float:
    """Single-label classification: the mean F1 over the labels (each label's own F1)."""
    _check_lengths(gold, pred)
    pairs = [(str(g), str(p)) for g, p in zip(gold, pred, strict=True)]
    names = [str(label) for label in labels] or sorted({g for g, _ in pairs})
    per_label = [
        _f1(
            sum(g == x and p == x for g, p in pairs),
            sum(g != x and p == x for g, p in pairs),
            sum(g == x and p != x for g, p in pairs),
        )
        for x in names
    ]
    return sum(per_label) / len(per_label) if per_label else 0.0


def accuracy(gold: Sequence, pred: Sequence) -> float:
    """PubMedQA, BioASQ: accuracy ×100."""
    _check_lengths(gold, pred)
    if not len(gold):
        return math.nan
    return 100.0 * sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold)


METRICS: dict[str, Callable[..., float]] = {
    "entity_f1": entity_f1,
    "relaxed_entity_f1": relaxed_entity_f1,
    "pico_macro_f1": pico_macro_f1,
    "micro_f1": micro_f1,
    "positive_f1": positive_f1,
    "pearson": pearson,
    "hoc_micro_f1": hoc_micro_f1,
    "hoc_macro_f1": hoc_macro_f1,
    "accuracy": accuracy,
    "macro_f1": macro_f1,
    **SPAN_METRICS,  # extractive QA (SQuAD, BioASQ factoid)
}


def positive_label(spec: TaskSpec) -> str:
    """The label GAD's F1 is about: the one that is not the negative label."""
    positives = [label for label in spec.labels if label != spec.negative_label]
    if len(positives) != 1:
        raise ValueError(f"task {spec.name}: positive_f1 needs exactly one non-negative label")
    return positives[0]


def metric_options(spec: TaskSpec) -> dict:
    """The keyword arguments the task's metric takes from its registry entry."""
    if spec.metric == "micro_f1":
        return {"negative_label": spec.negative_label}
    if spec.metric == "positive_f1":
        return {"positive_label": positive_label(spec)}
    if spec.metric == "pico_macro_f1":
        return {"labels": [label for label in spec.labels if label != "O"]}
    if spec.metric in ("hoc_micro_f1", "hoc_macro_f1", "macro_f1"):
        return {"labels": spec.labels}
    if spec.metric in ("squad_f1", "squad_em"):
        return {"version": str(spec.options.get("version", "2.0"))}
    return {}


def compute_metric(spec: TaskSpec, gold: Sequence, pred: Sequence) -> float:
    """The task's primary metric ×100 (docs/metrics.md)."""
    try:
        metric = METRICS[spec.metric]
    except KeyError:
        raise KeyError(f"task {spec.name}: unknown metric {spec.metric!r}") from None
    return metric(gold, pred, **metric_options(spec))


def also_reported(spec: TaskSpec, gold: Sequence, pred: Sequence) -> dict[str, float]:
    """Scores recorded beside the primary one: its family's (tasks.types.METRIC_FAMILIES; SQuAD:
    F1 and exact match; BioASQ factoid: MRR, strict and lenient accuracy; NER: strict and
    relaxed entity F1; HoC: pooled and per-hallmark-averaged F1); {} for a metric without one."""
    return {
        name: compute_metric(dataclasses.replace(spec, metric=name), gold, pred)
        for name in metric_family(spec.metric)
    }
