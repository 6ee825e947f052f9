"""Extractive-QA metrics and n-best decoding on hand-made cases whose values are worked out by
hand from the official definitions (SQuAD v1.1/v2.0 evaluate scripts, BioASQ's evaluator)."""

from __future__ import annotations

import pytest

from blurbflow.qa import (
    decode_predictions,
    factoid_answers,
    factoid_scores,
    nbest_spans,
    normalize_answer,
    squad_scores,
)
from blurbflow.qa.metrics import token_f1
from blurbflow.qa.windows import Windows

# --- SQuAD normalisation, EM and F1 ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("The  Cat, sat!", "cat sat"),
        ("an apple a day", "apple day"),
        ("Theatre", "theatre"),  # articles only as whole words
        ("  IL-2 (human) ", "il2 human"),
        ("the", ""),
    ],
)
def test_normalize_answer_as_the_official_scripts(text, normal):
    assert normalize_answer(text) == normal


def test_exact_and_f1_take_the_best_gold_answer():
    golds = {"q1": ["the cat sat", "a dog"], "q2": ["Paris"], "q3": ["blood pressure"]}
    predictions = {"q1": "cat sat on", "q2": "paris.", "q3": "pressure of blood vessels"}
    scores = squad_scores(golds, predictions, version="1.1")
    # q1: EM 0, F1 P=2/3 R=1 -> 0.8; q2: EM 1 F1 1; q3: 2 common of 4 predicted, 2 gold -> 2/3
    assert scores["total"] == 3
    assert scores["exact"] == pytest.approx(100 / 3)
    assert scores["f1"] == pytest.approx(100 * (0.8 + 1 + 2 / 3) / 3)


def test_f1_counts_repeated_tokens_once_each():
    # common tokens are a multiset intersection: cell min(2, 1) + death min(1, 2) = 2 of 3
    assert token_f1("cell cell death", "cell death death") == pytest.approx(2 / 3)


def test_v2_no_answer_questions():
    golds = {"a": ["insulin"], "b": [], "c": [""], "d": ["kinase"]}
    predictions = {"a": "insulin", "b": "", "c": "glucose", "d": ""}
    scores = squad_scores(golds, predictions, version="2.0")
    assert scores["exact"] == pytest.approx(50.0)
    assert scores["f1"] == pytest.approx(50.0)
    assert scores["has_ans_total"] == 2 and scores["has_ans_exact"] == pytest.approx(50.0)
    assert scores["no_ans_total"] == 2 and scores["no_ans_exact"] == pytest.approx(50.0)


def test_v11_and_v20_differ_on_empty_answers():
    assert token_f1("", "", "2.0") == 1.0
    assert token_f1("the", "a", "1.1") == 0.0  # both normalise to nothing: v1.1 finds no overlap
    assert token_f1("x", "", "2.0") == 0.0


def test_missing_prediction_and_bad_version_are_errors():
    with pytest.raises(ValueError, match="1 of 2 questions have no prediction.*q2"):
        squad_scores({"q1": ["a"], "q2": ["b"]}, {"q1": "a"})
    with pytest.raises(ValueError, match="'3.0'"):
        squad_scores({"q1": ["a"]}, {"q1": "a"}, version="3.0")


# --- BioASQ factoid --------------------------------------------------------------------------


def test_factoid_strict_lenient_mrr():
    golds = {
        "q1": [["BRCA1", "breast cancer 1"]],  # golden files: a list of synonym lists
        "q2": ["TP53", "p53"],
        "q3": [["EGFR"]],
        "q4": [["insulin"]],
        "q5": [["MYC"]],
    }
    predictions = {
        "q1": ["breast cancer 1", "BRCA2"],  # rank 1 (a synonym, case-insensitive)
        "q2": ["MDM2", "ATM", "P53"],  # rank 3
        "q3": ["a", "b", "c", "d", "e", "EGFR"],  # rank 6: outside the top 5
        "q5": ["MYC."],  # exact string match only: punctuation is not normalised
    }  # q4 unanswered
    scores = factoid_scores(golds, predictions)
    assert scores["total"] == 5
    assert scores["strict_acc"] == pytest.approx(100 * 1 / 5)
    assert scores["lenient_acc"] == pytest.approx(100 * 2 / 5)
    assert scores["mrr"] == pytest.approx(100 * (1 + 1 / 3) / 5)


def test_factoid_answers_merge_snippets_by_probability():
    def entry(text, probability):
        return {"text": text, "probability": probability}

    predictions = {
        "q1_000": {"nbest": [entry("BRCA1", 0.6), entry("BRCA2", 0.3), entry("", 0.1)]},
        "q1_001": {"nbest": [entry("brca1", 0.9), entry("ATM", 0.05)]},
        "q2_000": {"nbest": [entry(f"a{i}", 1 - i / 10) for i in range(8)]},
    }
    question_of = {"q1_000": "q1", "q1_001": "q1", "q2_000": "q2"}
    answers = factoid_answers(predictions, question_of)
    assert answers["q1"] == ["brca1", "BRCA2", "ATM"]
    assert answers["q2"] == ["a0", "a1", "a2", "a3", "a4"]


# --- n-best decoding -------------------------------------------------------------------------

CONTEXT = "insulin binds the receptor kinase"
# tokens: [CLS] q [SEP] insulin binds the receptor kinase [SEP]
OFFSETS = [None, None, None, (0, 7), (8, 13), (14, 17), (18, 26), (27, 33), None]


def _logits(start_peaks: dict[int, float], end_peaks: dict[int, float], size: int = 9):
    start, end = [0.0] * size, [0.0] * size
    for i, v in start_peaks.items():
        start[i] = v
    for i, v in end_peaks.items():
        end[i] = v
    return start, end


def test_nbest_ranks_valid_spans_and_respects_max_answer_length():
    # best raw pair (3, 7) spans 5 tokens; question tokens and end < start must never win
    start, end = _logits({1: 50, 3: 6, 6: 5, 7: 1}, {2: 50, 7: 6, 6: 4, 3: 0.5})
    nbest, null = nbest_spans(CONTEXT, [(start, end)], [OFFSETS], n_best=3, max_answer_length=2)
    assert [c["text"] for c in nbest] == ["receptor kinase", "receptor", "kinase"]
    assert nbest[0]["score"] == pytest.approx(11.0)
    assert sum(c["probability"] for c in nbest) == pytest.approx(1.0)
    assert null == pytest.approx(0.0)
    wide, _ = nbest_spans(CONTEXT, [(start, end)], [OFFSETS], n_best=3, max_answer_length=5)
    assert wide[0]["text"] == CONTEXT and wide[0]["score"] == pytest.approx(12.0)


def test_decoding_over_windows_keeps_best_score_per_text_and_null_threshold():
    # two windows of one example: the second scores "kinase" higher; null = min over windows
    examples = [{"id": "e1", "context": CONTEXT}]
    windows = Windows(example_index=[0, 0], offsets=[OFFSETS, OFFSETS], input_ids=[[0], [0]])
    s1, e1 = _logits({0: 4, 7: 2}, {0: 4, 7: 2})
    s2, e2 = _logits({0: 1, 7: 3}, {0: 2, 7: 3})
    out = decode_predictions(examples, windows, [s1, s2], [e1, e2], n_best=5)
    assert out["e1"]["text"] == "kinase"
    assert out["e1"]["nbest"][0]["score"] == pytest.approx(6.0)
    assert out["e1"]["null_score"] == pytest.approx(3.0)
    v2 = decode_predictions(examples, windows, [s1, s2], [e1, e2], version_2=True)
    assert v2["e1"]["text"] == "kinase"  # null 3 - best 6 = -3 <= 0
    null_wins = decode_predictions(
        examples, windows, [s1, s2], [e1, e2], version_2=True, null_threshold=-4.0
    )
    assert null_wins["e1"]["text"] == ""
    with pytest.raises(ValueError, match="one row per window"):
        decode_predictions(examples, windows, [s1], [e1])
