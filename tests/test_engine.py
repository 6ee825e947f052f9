"""Engine pieces on a tiny BERT built in the test: layer surgery, optimizer, schedule, batching."""

import math
import random

import pytest
import torch
from transformers import AlbertConfig, AlbertModel, BertConfig, BertForSequenceClassification

from blurbflow.models import surgery
from blurbflow.train.batching import (
    collate,
    eval_batches,
    label_weights,
    micro_batches,
    train_batches,
)
from blurbflow.train.optim import AdamW, linear_schedule

from model_helpers import tiny_classifier


def test_freeze_lower_half_keeps_frozen_weights_after_a_step():
    model = tiny_classifier()
    assert surgery.freeze_lower(model, "half") == 2
    frozen = {n: p.clone() for n, p in model.named_parameters() if not p.requires_grad}
    assert any(n.startswith("bert.embeddings") for n in frozen)
    assert any(".layer.1." in n for n in frozen) and not any(".layer.2." in n for n in frozen)
    groups = surgery.parameter_groups(model, 1e-2, 0.01, None)
    opt = AdamW([{k: v for k, v in g.items() if k != "names"} for g in groups], lr=1e-2)
    out = model(input_ids=torch.tensor([[1, 2, 3]]), labels=torch.tensor([1]))
    out.loss.backward()
    opt.step()
    for name, param in model.named_parameters():
        if name in frozen:
            assert torch.equal(param, frozen[name]), name


def test_layerwise_lr_decay_groups_follow_electra_convention():
    model = tiny_classifier(layers=4)
    groups = surgery.parameter_groups(model, 1.0, 0.01, 0.8)
    lr_of = {name: g["lr"] for g in groups for name in g["names"]}
    assert lr_of["classifier.weight"] == 1.0
    assert lr_of["bert.pooler.dense.weight"] == 1.0
    assert lr_of["bert.encoder.layer.3.attention.self.query.weight"] == pytest.approx(0.8**2)
    assert lr_of["bert.encoder.layer.0.output.dense.weight"] == pytest.approx(0.8**5)
    assert lr_of["bert.embeddings.word_embeddings.weight"] == pytest.approx(0.8**6)
    wd_of = {name: g["weight_decay"] for g in groups for name in g["names"]}
    assert wd_of["bert.encoder.layer.0.output.LayerNorm.weight"] == 0.0
    assert wd_of["bert.encoder.layer.0.output.dense.bias"] == 0.0
    assert wd_of["bert.encoder.layer.0.output.dense.weight"] == 0.01


def test_reinit_top_redraws_top_layer_and_pooler_only():
    model = tiny_classifier(layers=3)
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(0.5)
    surgery.reinit_top(model, 1, seed=0)
    top = model.bert.encoder.layer[2]
    weight = top.intermediate.dense.weight
    assert weight.std().item() == pytest.approx(0.02, rel=0.2) and abs(weight.mean().item()) < 0.01
    assert torch.all(top.intermediate.dense.bias == 0)
    assert torch.all(top.output.LayerNorm.weight == 1) and torch.all(top.output.LayerNorm.bias == 0)
    assert model.bert.pooler.dense.weight.std().item() == pytest.approx(0.02, rel=0.2)
    assert torch.all(model.bert.encoder.layer[1].intermediate.dense.weight == 0.5)


def test_remove_top_leaves_fewer_layers_that_still_run():
    model = tiny_classifier(layers=4)
    surgery.remove_top(model, 2)
    assert len(model.bert.encoder.layer) == 2 and model.config.num_hidden_layers == 2
    assert model(input_ids=torch.tensor([[1, 2]])).logits.shape == (1, 2)


def test_albert_layout_fails_clearly():
    albert = AlbertModel(
        AlbertConfig(
            vocab_size=20,
            hidden_size=16,
            num_attention_heads=2,
            intermediate_size=32,
            embedding_size=8,
        )
    )
    with pytest.raises(surgery.UnsupportedLayout, match="ALBERT shares its layer weights"):
        surgery.freeze_lower(albert, 1)


@pytest.mark.parametrize("correct", [True, False])
def test_one_adamw_step_matches_the_formula(correct):
    lr, b1, b2, eps, wd = 0.1, 0.9, 0.999, 1e-8, 0.01
    param = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    grad = torch.tensor([0.5, 0.25])
    param.grad = grad.clone()
    AdamW([param], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd, bias_correction=correct).step()
    m, v = (1 - b1) * grad, (1 - b2) * grad**2
    if correct:
        m, v = m / (1 - b1), v / (1 - b2)
    expected = torch.tensor([1.0, -2.0]) - lr * (
        m / (v.sqrt() + eps) + wd * torch.tensor([1.0, -2.0])
    )
    assert torch.allclose(param.detach(), expected, atol=1e-6)
    # the uncorrected first step is (1-b1)/sqrt(1-b2) ≈ 3.16 times the corrected one
    assert (abs(1.0 - param[0].item()) > 0.2) is (not correct)


@pytest.mark.parametrize(("total", "ratio"), [(100, 0.1), (37, 0.06), (20, 0.0), (5, 0.5)])
def test_linear_schedule_matches_transformers_and_starts_at_zero(total, ratio):
    from transformers import get_linear_schedule_with_warmup

    def rates(make):
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=2.0)
        sched, out = make(opt), []
        for _ in range(total):
            out.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        return out

    ours = rates(lambda opt: linear_schedule(opt, total, ratio))
    warmup = int(total * ratio)
    theirs = rates(lambda opt: get_linear_schedule_with_warmup(opt, warmup, total))
    assert ours == pytest.approx(theirs, abs=1e-12)
    if warmup:
        assert ours[0] == 0.0 and ours[1] == pytest.approx(2.0 / warmup)
        assert max(ours) == pytest.approx(2.0) and ours.index(max(ours)) == warmup
    assert ours[-1] == pytest.approx(2.0 / (total - warmup))


def test_train_batches_are_a_seeded_random_partition():
    batches = train_batches(list(range(100)), 32, random.Random(1))
    assert [len(b) for b in batches] == [32, 32, 32, 4]
    assert sorted(i for b in batches for i in b) == list(range(100))
    assert batches == train_batches(list(range(100)), 32, random.Random(1))
    assert batches != train_batches(list(range(100)), 32, random.Random(2))
    assert sorted(i for b in eval_batches(list(range(100)), 64) for i in b) == list(range(100))


def padded(lengths, parts):
    return sum(len(p) * max(lengths[i] for i in p) for p in parts)


def test_micro_batches_split_a_batch_where_padding_is_least():
    rng = random.Random(0)
    lengths = [rng.choice([8, 9, 30, 31, 120]) + rng.randint(0, 3) for _ in range(32)]
    rows = list(range(32))
    parts = micro_batches(lengths, rows, "bucketed", parts=3)
    assert len(parts) <= 3 and sorted(i for p in parts for i in p) == rows
    # optimal: no other cut of the length-sorted rows into ≤ 3 runs pads less
    ranked = sorted(rows, key=lambda i: (lengths[i], i))
    best = min(
        padded(
            lengths, [ranked[:a], ranked[a:b], ranked[b:]] if b < 32 else [ranked[:a], ranked[a:]]
        )
        for a in range(1, 32)
        for b in range(a + 1, 33)
    )
    assert padded(lengths, parts) == best < padded(lengths, [rows]) / 2
    assert micro_batches(lengths, rows, "random") == [rows]
    with pytest.raises(ValueError, match="batching: unknown 'sorted'; use one of bucketed, random"):
        micro_batches(lengths, rows, "sorted")


def test_a_pass_costs_tokens_so_small_models_and_gpus_split_less():
    from blurbflow.train.batching import pass_cost

    assert pass_cost("cpu", 768) == 16 and pass_cost("cpu", 128) == 576
    assert pass_cost("cuda", 768) == 2048
    lengths = [10] * 8 + [40] * 8  # one pass: 16 × 40 = 640 tokens; two: 80 + 320 = 400
    assert len(micro_batches(lengths, list(range(16)), pass_tokens=16)) == 2
    assert len(micro_batches(lengths, list(range(16)), pass_tokens=576)) == 1  # 400 + 1152 > 640
    long = [50] * 8 + [500] * 8  # 8000 tokens in one pass, 4400 in two: worth it even on a GPU
    assert len(micro_batches(long, list(range(16)), pass_tokens=pass_cost("cuda", 768))) == 2


@pytest.mark.parametrize("token_level", [False, True])
def test_micro_batch_gradients_equal_the_whole_batch_gradient(token_level):
    from transformers import BertForTokenClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        num_labels=3,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = (BertForTokenClassification if token_level else BertForSequenceClassification)(config)
    rng = random.Random(1)
    data = {
        "input_ids": [
            [2] + [rng.randint(5, 49) for _ in range(rng.randint(1, 20))] for _ in range(12)
        ]
    }
    data["length"] = [len(x) for x in data["input_ids"]]
    if token_level:
        data["labels"] = [
            [-100] + [rng.choice([-100, 0, 1, 2]) for _ in x[1:]] for x in data["input_ids"]
        ]
    else:
        data["label"] = [rng.randint(0, 2) for _ in range(12)]
    rows = list(range(12))

    def gradient(parts):
        model.zero_grad()
        batches = [collate(data, p, 0, torch.long) for p in parts]
        for weight, batch in zip(label_weights(batches), batches, strict=True):
            (model(**batch).loss * weight).backward()
        return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])

    parts = micro_batches(data["length"], rows, "bucketed", parts=4)
    assert len(parts) == 4
    assert torch.allclose(gradient(parts), gradient([rows]), atol=1e-6)


def test_collate_pads_and_masks():
    data = {"input_ids": [[2, 5, 3], [2, 3]], "label": [1, 0], "length": [3, 2]}
    batch = collate(data, [0, 1], pad_id=0, label_dtype=torch.long)
    assert batch["input_ids"].tolist() == [[2, 5, 3], [2, 3, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch["labels"].tolist() == [1, 0]
    assert math.isclose(float(batch["attention_mask"].sum()), 5)


def test_collate_gathers_ragged_columns_as_it_pads_lists():
    import pyarrow as pa

    from blurbflow.train.encode import RaggedColumn

    rng = random.Random(3)
    lists = {"input_ids": [[2] + [rng.randint(5, 49) for _ in range(rng.randint(0, 30))]]}
    lists["input_ids"] += [[2] + [rng.randint(5, 49) for _ in range(rng.randint(0, 30))]]
    lists["input_ids"] *= 20
    lists["token_type_ids"] = [[i % 2] * len(x) for i, x in enumerate(lists["input_ids"])]
    lists["labels"] = [
        [-100] + [rng.choice([-100, 0, 1]) for _ in x[1:]] for x in lists["input_ids"]
    ]
    ragged = {k: RaggedColumn(pa.chunked_array([pa.array(v)])) for k, v in lists.items()}
    column = ragged["input_ids"]
    assert column.lengths([1, 0]).tolist() == [
        len(lists["input_ids"][1]),
        len(lists["input_ids"][0]),
    ]
    assert column.padded([0], 2, -1).tolist() == [lists["input_ids"][0][:2]]  # cut at the width
    for _ in range(20):
        rows = rng.sample(range(40), rng.randint(1, 12))
        a, b = collate(ragged, rows, 0, torch.long), collate(lists, rows, 0, torch.long)
        assert a.keys() == b.keys()
        assert all(a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a)


class _Fixed(torch.nn.Module):
    """An "encoder" returning hand-made hidden states, to test the pooling alone."""

    base_model_prefix = "bert"

    def __init__(self, states):
        super().__init__()
        self.states = states
        self.config = BertConfig(hidden_size=states.shape[-1])

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        return type("Out", (), {"last_hidden_state": self.states})


def test_max_and_mean_mention_pooling_on_hand_made_states():
    from blurbflow.models.heads import TaskModel

    # one instance, 6 positions, hidden 2; e1 = tokens [1, 3), e2 = tokens [3, 6)
    states = torch.tensor(
        [[[9.0, 9.0], [1.0, -5.0], [-2.0, 4.0], [0.5, -1.0], [-3.0, -0.5], [2.0, -7.0]]]
    )
    spans = torch.tensor([[[1, 3], [3, 6]]])
    pooled = {}
    for pooling in ("max", "mention"):
        model = TaskModel(
            _Fixed(states), token_level=False, num_labels=2, problem_type=None, pooling=pooling
        )
        assert model.classifier.in_features == 4
        pooled[pooling] = model._pool(states, torch.ones(1, 6), spans, None)
    assert pooled["max"].tolist() == [[1.0, 4.0, 2.0, -0.5]]  # never [CLS]'s 9.0
    assert pooled["mention"].tolist()[0] == pytest.approx([-0.5, -0.5, -0.5 / 3, -8.5 / 3])


def test_max_pooling_of_an_empty_span_is_zero_not_minus_infinity():
    from blurbflow.models.heads import TaskModel

    states = torch.randn(2, 4, 3)
    model = TaskModel(
        _Fixed(states), token_level=False, num_labels=2, problem_type=None, pooling="max"
    )
    pooled = model._pool(states, torch.ones(2, 4), torch.tensor([[[1, 1], [2, 4]]] * 2), None)
    assert torch.all(pooled[:, :3] == 0) and torch.equal(pooled[:, 3:], states[:, 2:].amax(1))
