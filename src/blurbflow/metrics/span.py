"""Extractive-QA metrics on a split's instances (docs/metrics.md), ×100 like every metric here.

Gold per instance: {"question_id", "answers"} (SQuAD's gold answers, [] for an unanswerable
v2.0 question; BioASQ's synonyms); prediction per instance: {"text", "score", "nbest":
[[text, probability], …]} (blurbflow.train.decode_span). Scores are per question:

- squad_f1 / squad_em: the official SQuAD scripts (`blurbflow.qa.squad_scores`, `version` from
  the task); a question with several instances answers with its best-scoring non-empty text.
- factoid_mrr / factoid_strict / factoid_lenient: BioASQ's factoid measures over the top 5
  answers, the n-best lists of a question's snippets merged by probability (BioBERT's way).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from blurbflow.qa.decode import factoid_answers
from blurbflow.qa.metrics import FACTOID_TOP, factoid_scores, normalize_answer, squad_scores


def _as_prediction(pred) -> dict:
    if isinstance(pred, str):
        return {"text": pred, "score": 0.0, "nbest": [[pred, 1.0]] if pred else []}
    return pred


def _check(gold: Sequence, pred: Sequence) -> None:
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} items but pred has {len(pred)}")
    if not len(gold):
        raise ValueError("no instances to score")


def _squad(gold: Sequence[dict], pred: Sequence, version: str) -> dict[str, float]:
    _check(gold, pred)
    golds: dict[str, list[str]] = {}
    best: dict[str, tuple[float, str]] = {}
    for g, p in zip(gold, map(_as_prediction, pred), strict=True):
        qid = str(g["question_id"])
        golds.setdefault(qid, list(g["answers"]))
        score = p.get("score")
        candidate = (float("-inf") if score is None or not p["text"] else score, p["text"])
        if qid not in best or candidate[0] > best[qid][0]:
            best[qid] = candidate
    return squad_scores(golds, {q: text for q, (_, text) in best.items()}, version)


def squad_f1(gold: Sequence[dict], pred: Sequence, version: str = "2.0") -> float:
    return _squad(gold, pred, version)["f1"]


def squad_em(gold: Sequence[dict], pred: Sequence, version: str = "2.0") -> float:
    return _squad(gold, pred, version)["exact"]


def _factoid(gold: Sequence[dict], pred: Sequence) -> dict[str, float]:
    _check(gold, pred)
    golds = {str(g["question_id"]): list(g["answers"]) for g in gold}
    predictions, question_of = {}, {}
    for k, (g, p) in enumerate(zip(gold, map(_as_prediction, pred), strict=True)):
        nbest = [{"text": text, "probability": prob} for text, prob in p["nbest"]]
        predictions[str(k)] = {"nbest": nbest}
        question_of[str(k)] = str(g["question_id"])
    return factoid_scores(golds, factoid_answers(predictions, question_of, FACTOID_TOP))


def factoid_mrr(gold: Sequence[dict], pred: Sequence) -> float:
    return _factoid(gold, pred)["mrr"]


def factoid_strict(gold: Sequence[dict], pred: Sequence) -> float:
    return _factoid(gold, pred)["strict_acc"]


def factoid_lenient(gold: Sequence[dict], pred: Sequence) -> float:
    return _factoid(gold, pred)["lenient_acc"]


METRICS = {
    "squad_f1": squad_f1,
    "squad_em": squad_em,
    "factoid_mrr": factoid_mrr,
    "factoid_strict": factoid_strict,
    "factoid_lenient": factoid_lenient,
}


def span_chance(metric, train_gold: Sequence[dict], eval_gold: Sequence[dict]) -> float:
    """The best input-ignoring answer chosen on the training gold, scored on `eval_gold`:
    SQuAD metrics the better of "no answer" (v2.0: the share of unanswerable questions) and the
    most frequent training answer; factoid metrics the 5 most frequent training answers as
    every question's ranked list. `metric`: (gold, pred) -> score."""
    reference = train_gold if len(train_gold) else eval_gold
    counts = Counter(
        a.strip() for g in reference for a in list(g["answers"])[:1] if normalize_answer(a)
    )
    frequent = [a for a, _ in counts.most_common(FACTOID_TOP)]
    candidates = [{"text": "", "score": 0.0, "nbest": []}]
    if frequent:
        nbest = [[a, 1.0] for a in frequent]
        candidates.append({"text": frequent[0], "score": 0.0, "nbest": nbest})
    best = max(candidates, key=lambda c: metric(reference, [c] * len(reference)))
    return metric(eval_gold, [best] * len(eval_gold))
