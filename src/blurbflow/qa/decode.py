"""n-best span decoding over an example's windows (Google's run_squad.py / transformers'
`postprocess_qa_predictions`).

Per window, the `n_best` highest start and end logits inside the context part are paired; a
pair is a candidate when end >= start and it spans at most `max_answer_length` tokens; its score
is start + end logit. Candidates of all windows are ranked, equal answer texts keep their best
score, and the first `n_best` are returned with softmax probabilities. The null (no-answer)
score is the smallest CLS start + end logit over the windows; with `version_2`, the prediction
is "" when null score - best span score > `null_threshold`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from blurbflow.qa.windows import Windows


def _top(logits: np.ndarray, count: int) -> list[int]:
    return [int(i) for i in np.argsort(logits, kind="stable")[::-1][:count]]


def nbest_spans(
    context: str,
    window_logits: Sequence[tuple[Sequence[float], Sequence[float]]],
    window_offsets: Sequence[Sequence[tuple[int, int] | None]],
    n_best: int = 20,
    max_answer_length: int = 30,
    cls_index: int = 0,
) -> tuple[list[dict], float]:
    """([{"text", "score", "start", "end", "probability"}, ...] best first, null score) of one
    example; `start`/`end` are character offsets into `context`."""
    candidates: dict[str, dict] = {}
    null_score = math.inf
    for (start_logits, end_logits), offsets in zip(window_logits, window_offsets, strict=True):
        start_logits = np.asarray(start_logits, dtype=np.float64)[: len(offsets)]
        end_logits = np.asarray(end_logits, dtype=np.float64)[: len(offsets)]
        null_score = min(null_score, float(start_logits[cls_index] + end_logits[cls_index]))
        inside = np.array([o is not None for o in offsets])
        masked_start = np.where(inside, start_logits, -np.inf)
        masked_end = np.where(inside, end_logits, -np.inf)
        for s in _top(masked_start, n_best):
            if offsets[s] is None:
                continue
            for e in _top(masked_end, n_best):
                if offsets[e] is None or e < s or e - s + 1 > max_answer_length:
                    continue
                score = float(start_logits[s] + end_logits[e])
                begin, finish = offsets[s][0], offsets[e][1]
                text = context[begin:finish]
                if text not in candidates or candidates[text]["score"] < score:
                    candidates[text] = {"text": text, "score": score, "start": begin, "end": finish}
    ranked = sorted(candidates.values(), key=lambda c: (-c["score"], c["start"], c["end"]))[:n_best]
    if ranked:
        scores = np.array([c["score"] for c in ranked])
        weights = np.exp(scores - scores.max())
        for candidate, probability in zip(ranked, weights / weights.sum(), strict=True):
            candidate["probability"] = float(probability)
    return ranked, null_score


def decode_predictions(
    examples: Sequence[dict],
    windows: Windows,
    start_logits: Sequence[Sequence[float]],
    end_logits: Sequence[Sequence[float]],
    n_best: int = 20,
    max_answer_length: int = 30,
    version_2: bool = False,
    null_threshold: float = 0.0,
) -> dict[str, dict]:
    """id -> {"text" (the prediction; "" = no answer), "nbest", "null_score"} for every example,
    from the start/end logits of every window (rows aligned with `windows`)."""
    if len(start_logits) != len(windows) or len(end_logits) != len(windows):
        raise ValueError(
            f"{len(start_logits)} start and {len(end_logits)} end logit rows for "
            f"{len(windows)} windows; pass one row per window"
        )
    by_example: dict[int, list[int]] = {}
    for w, index in enumerate(windows.example_index):
        by_example.setdefault(index, []).append(w)
    predictions: dict[str, dict] = {}
    for index, example in enumerate(examples):
        rows = by_example.get(index, [])
        nbest, null_score = nbest_spans(
            example["context"],
            [(start_logits[w], end_logits[w]) for w in rows],
            [windows.offsets[w] for w in rows],
            n_best=n_best,
            max_answer_length=max_answer_length,
        )
        text = nbest[0]["text"] if nbest else ""
        if version_2 and (not nbest or null_score - nbest[0]["score"] > null_threshold):
            text = ""
        predictions[example["id"]] = {"text": text, "nbest": nbest, "null_score": null_score}
    return predictions


def factoid_answers(
    predictions: dict[str, dict], question_of: dict[str, str], top: int = 5
) -> dict[str, list[str]]:
    """question id -> up to `top` ranked answers, merging the n-best lists of its snippets
    (one example per question-snippet pair, `question_of`: example id -> question id) by
    probability, each answer once (case-insensitively), as BioBERT's BioASQ conversion does."""
    pooled: dict[str, list[tuple[float, str]]] = {}
    for example_id, prediction in predictions.items():
        qid = question_of[example_id]
        pooled.setdefault(qid, []).extend(
            (c["probability"], c["text"]) for c in prediction["nbest"] if c["text"].strip()
        )
    answers: dict[str, list[str]] = {}
    for qid, scored in pooled.items():
        ranked, seen = [], set()
        for _, text in sorted(scored, key=lambda pair: -pair[0]):
            key = text.strip().lower()
            if key not in seen:
                seen.add(key)
                ranked.append(text.strip())
            if len(ranked) == top:
                break
        answers[qid] = ranked
    return answers
