"""Extractive-QA metrics as the official scripts define them, ×100 like every blurbflow metric.

SQuAD (evaluate-v1.1.py / evaluate-v2.0.py): answers are normalised (lower case, punctuation
removed, the articles a/an/the removed, whitespace collapsed); exact match and token F1 take the
maximum over the gold answers. v2.0 treats a question whose gold answers all normalise to ""
as unanswerable: only the empty prediction scores there, and an empty prediction against
answerable gold scores 0. v1.1's F1 of two empty strings is 0, v2.0's is 1.

BioASQ factoid (the official Java evaluator, phase B): gold and system answers are lower-cased
and compared as whole strings; a question's gold is the list of synonyms of its answer. Strict
accuracy: the first system answer is a synonym; lenient accuracy: one of the top 5 is; MRR: the
mean of 1/rank of the first correct answer in the top 5 (0 when none is). Averages run over all
gold questions; a question without system answers scores 0.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence

PUNCTUATION = frozenset(string.punctuation)
ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
FACTOID_TOP = 5  # BioASQ: up to five ranked answers per factoid question


def normalize_answer(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces (both official SQuAD scripts)."""
    text = "".join(ch for ch in text.lower() if ch not in PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", text).split())


def exact_match(gold: str, prediction: str) -> int:
    return int(normalize_answer(gold) == normalize_answer(prediction))


def token_f1(gold: str, prediction: str, version: str = "2.0") -> float:
    gold_tokens = normalize_answer(gold).split()
    pred_tokens = normalize_answer(prediction).split()
    if version == "2.0" and (not gold_tokens or not pred_tokens):
        return float(gold_tokens == pred_tokens)  # v2.0: no-answer agreement scores 1
    same = sum((Counter(gold_tokens) & Counter(pred_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _check_version(version: str) -> None:
    if version not in ("1.1", "2.0"):
        raise ValueError(f"SQuAD version {version!r}: use '1.1' or '2.0'")


def _missing(golds: Mapping, predictions: Mapping, what: str) -> None:
    missing = [qid for qid in golds if qid not in predictions]
    if missing:
        raise ValueError(
            f"{len(missing)} of {len(golds)} questions have no {what} (first: "
            f"{', '.join(map(str, missing[:5]))}); decode every question before scoring"
        )


def squad_scores(
    golds: Mapping[str, Sequence[str]], predictions: Mapping[str, str], version: str = "2.0"
) -> dict[str, float]:
    """{"exact", "f1", "total"} (+ "has_ans_*"/"no_ans_*" for v2.0) over the questions of
    `golds` (id -> gold answer texts; [] or [""] for an unanswerable v2.0 question);
    `predictions`: id -> predicted text ("" = no answer). Every gold id needs a prediction."""
    _check_version(version)
    _missing(golds, predictions, "prediction")
    exact: dict[str, float] = {}
    f1: dict[str, float] = {}
    has_answer: dict[str, bool] = {}
    for qid, answers in golds.items():
        prediction = predictions[qid]
        answers = list(answers)
        if version == "2.0":
            answers = [a for a in answers if normalize_answer(a)] or [""]
        elif not answers:
            raise ValueError(f"question {qid}: SQuAD v1.1 needs at least one gold answer")
        has_answer[qid] = answers != [""]
        exact[qid] = max(exact_match(a, prediction) for a in answers)
        f1[qid] = max(token_f1(a, prediction, version) for a in answers)
    scores = _means(exact, f1, list(golds))
    if version == "2.0":
        for name, keep in (("has_ans", True), ("no_ans", False)):
            ids = [qid for qid in golds if has_answer[qid] is keep]
            if ids:
                part = _means(exact, f1, ids)
                scores.update({f"{name}_{key}": value for key, value in part.items()})
    return scores


def _means(exact: dict, f1: dict, ids: list[str]) -> dict[str, float]:
    total = len(ids)
    if not total:
        return {"exact": 0.0, "f1": 0.0, "total": 0}
    return {
        "exact": 100.0 * sum(exact[q] for q in ids) / total,
        "f1": 100.0 * sum(f1[q] for q in ids) / total,
        "total": total,
    }


def _synonyms(gold) -> set[str]:
    """Gold synonyms lower-cased; BioASQ gives ["a", "b"] or [["a", "b"]] (lists of lists)."""
    out: set[str] = set()
    for item in [gold] if isinstance(gold, str) else gold:
        if isinstance(item, str):
            out.add(item.lower())
        else:
            out.update(s.lower() for s in item)
    return out


def factoid_scores(
    golds: Mapping[str, Sequence], predictions: Mapping[str, Sequence[str]], top: int = FACTOID_TOP
) -> dict[str, float]:
    """{"strict_acc", "lenient_acc", "mrr", "total"} ×100 over the questions of `golds`
    (id -> gold synonyms); `predictions`: id -> ranked answers (only the first `top` count).
    A question missing from `predictions` scores 0, as in the official evaluator."""
    strict = lenient = reciprocal = 0.0
    for qid, gold in golds.items():
        synonyms = _synonyms(gold)
        if not synonyms:
            raise ValueError(f"question {qid}: no gold answer synonyms")
        ranked = [a.lower() for a in list(predictions.get(qid, ()))[:top]]
        rank = next((i for i, answer in enumerate(ranked, 1) if answer in synonyms), None)
        if rank is not None:
            strict += rank == 1
            lenient += 1
            reciprocal += 1.0 / rank
    total = len(golds)
    if not total:
        raise ValueError("no gold factoid questions to score")
    return {
        "strict_acc": 100.0 * strict / total,
        "lenient_acc": 100.0 * lenient / total,
        "mrr": 100.0 * reciprocal / total,
        "total": total,
    }
