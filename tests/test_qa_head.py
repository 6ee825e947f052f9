"""The span head on a transformers `AutoModel` encoder: padding masked out, out-of-window gold
positions ignored, and a tiny BERT that learns the generated SQuAD data (EM and F1 rise well
above the untrained model's)."""

from __future__ import annotations

import types

import pytest
import torch

from blurbflow.data.generate import squad as squad_generator
from blurbflow.data.parsers import squad
from blurbflow.qa import (
    SpanHead,
    SpanModel,
    decode_predictions,
    make_windows,
    span_loss,
    squad_scores,
)

from model_helpers import tiny_bert


def test_head_masks_padding_and_loss_ignores_positions_outside_the_input():
    torch.manual_seed(0)
    head = SpanHead(8)
    hidden = torch.randn(2, 5, 8)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    start, end = head(hidden, mask)
    assert start.shape == end.shape == (2, 5)
    lowest = torch.finfo(start.dtype).min
    assert (start[1, 3:] == lowest).all() and (end[1, 3:] == lowest).all()
    assert (start[0] > lowest).all()
    # a gold position past the window (index 9 of 5 tokens) is ignored, not an error
    both = span_loss(start, end, torch.tensor([1, 9]), torch.tensor([2, 9]))
    first = span_loss(start[:1], end[:1], torch.tensor([1]), torch.tensor([2]))
    assert both.item() == pytest.approx(first.item())


def _batch(windows, rows):
    width = max(len(windows.input_ids[i]) for i in rows)

    def pad(values):
        return torch.tensor([values[i] + [0] * (width - len(values[i])) for i in rows])

    batch = {"input_ids": pad(windows.input_ids), "attention_mask": pad(windows.attention_mask)}
    if windows.token_type_ids is not None:
        batch["token_type_ids"] = pad(windows.token_type_ids)
    return batch


def _evaluate(model, windows, examples) -> dict:
    model.eval()
    starts, ends = [], []
    with torch.no_grad():
        for first in range(0, len(windows), 64):
            rows = list(range(first, min(first + 64, len(windows))))
            out = model(**_batch(windows, rows))
            for k, w in enumerate(rows):
                n = len(windows.input_ids[w])
                starts.append(out["start_logits"][k, :n].tolist())
                ends.append(out["end_logits"][k, :n].tolist())
    predictions = decode_predictions(examples, windows, starts, ends, max_answer_length=8)
    golds = {e["id"]: e["gold_answers"] for e in examples}
    return squad_scores(golds, {q: p["text"] for q, p in predictions.items()}, version="1.1")


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 16-wide model: threads only add overhead
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_tiny_bert_learns_generated_squad(tmp_path, one_thread):
    from transformers import AutoModel

    squad_generator.generate(tmp_path / "squad", seed=0, version="1.1")
    spec = types.SimpleNamespace(name="squad", sources=("squad",), options={"version": "1.1"})
    frames = squad.parse(spec, tmp_path)
    train, test = (frames[s].to_dict("records") for s in ("train", "test"))
    encoder, _, tokenizer = tiny_bert(
        [e["context"] for e in train] + [e["question"] for e in train], 400, layers=2
    )
    encoder.save_pretrained(tmp_path / "tiny")
    model = SpanModel(AutoModel.from_pretrained(tmp_path / "tiny"), dropout=0.0)
    windows = make_windows(tokenizer, train, max_length=64, doc_stride=16, max_question_length=16)
    test_windows = make_windows(tokenizer, test, 64, 16, 16)
    assert len(windows) > len(train)  # long paragraphs span several windows
    before = _evaluate(model, test_windows, test)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(3):
        model.train()
        order = torch.randperm(len(windows), generator=generator).tolist()
        for first in range(0, len(order), 16):
            rows = order[first : first + 16]
            out = model(
                **_batch(windows, rows),
                start_positions=torch.tensor([windows.start_positions[i] for i in rows]),
                end_positions=torch.tensor([windows.end_positions[i] for i in rows]),
            )
            optimizer.zero_grad()
            out["loss"].backward()
            optimizer.step()
            losses.append(out["loss"].item())
    after = _evaluate(model, test_windows, test)
    assert sum(losses[-10:]) / 10 < 0.7 * sum(losses[:10]) / 10
    assert before["exact"] < 5 and after["exact"] >= 10
    assert after["f1"] > before["f1"] + 10
