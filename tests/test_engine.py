"""Engine pieces on a tiny BERT built in the test: layer surgery, optimizer, schedule, batching."""

import math
import random

import pytest
import torch
from transformers import AlbertConfig, AlbertModel, BertConfig, BertForSequenceClassification

from blurbflow.models import surgery
from blurbflow.train.batching import collate, eval_batches, train_batches
from blurbflow.train.optim import AdamW, linear_schedule


def tiny_bert(layers=4):
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=32,
        num_labels=2,
    )
    return BertForSequenceClassification(config)


def test_freeze_lower_half_keeps_frozen_weights_after_a_step():
    model = tiny_bert()
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
    model = tiny_bert(layers=4)
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
    model = tiny_bert(layers=3)
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
    model = tiny_bert(layers=4)
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
    with pytest.raises(surgery.UnsupportedLayout, match="ALBERT shares one layer"):
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


def test_linear_schedule_warms_up_then_decays_to_zero():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = linear_schedule(opt, total_steps=100, warmup_ratio=0.1)
    lrs = []
    for _ in range(100):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[0] < lrs[5] < lrs[9] and max(lrs) == pytest.approx(1.0, abs=0.1)
    assert lrs[-1] == pytest.approx(1 / 90) and lrs[50] < lrs[20]


def test_train_batches_cover_every_example_once_and_pad_little():
    rng = random.Random(0)
    lengths = [rng.randint(5, 120) for _ in range(5000)]
    batches = train_batches(lengths, 32, random.Random(1))
    assert sorted(i for b in batches for i in b) == list(range(5000))
    computed = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    assert sum(lengths) / computed > 0.9
    assert batches != train_batches(lengths, 32, random.Random(2))  # reshuffled per seed/epoch
    assert sorted(i for b in eval_batches(lengths, 64) for i in b) == list(range(5000))


def test_collate_pads_and_masks():
    data = {"input_ids": [[2, 5, 3], [2, 3]], "label": [1, 0], "length": [3, 2]}
    batch = collate(data, [0, 1], pad_id=0, label_dtype=torch.long)
    assert batch["input_ids"].tolist() == [[2, 5, 3], [2, 3, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch["labels"].tolist() == [1, 0]
    assert math.isclose(float(batch["attention_mask"].sum()), 5)
