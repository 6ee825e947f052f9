"""Packed training batches for token-level tasks (blurbflow.train.packing): every sequence's
logits and the batch's loss and gradient are those of the unpacked batch, up to float rounding."""

from __future__ import annotations

import random

import pytest
import torch
from transformers import (
    AlbertConfig,
    AlbertForTokenClassification,
    BertConfig,
    BertForSequenceClassification,
    BertForTokenClassification,
    DebertaV2Config,
    DebertaV2ForTokenClassification,
    ElectraConfig,
    ElectraForTokenClassification,
    RobertaConfig,
    RobertaForTokenClassification,
)

from blurbflow.train import batching
from blurbflow.train.packing import first_position, pack, packed_batch, packs

CPU = torch.device("cpu")


SIZES = dict(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=64, num_labels=3)  # fmt: skip


def tiny(config_class, model_class, **extra):
    """A tiny random model of `model_class` (seeded: the same weights every call)."""
    torch.manual_seed(0)
    return model_class(config_class(**SIZES, **extra))


def tiny_bert(cls=BertForTokenClassification):
    return tiny(BertConfig, cls, type_vocab_size=2)


def tiny_roberta():
    """RoBERTa-style: position ids counted from its pad id (1) + 1."""
    return tiny(
        RobertaConfig, RobertaForTokenClassification, pad_token_id=1, max_position_embeddings=64
    )


def tiny_electra():
    return tiny(ElectraConfig, ElectraForTokenClassification, embedding_size=16)


def tiny_albert():
    return tiny(AlbertConfig, AlbertForTokenClassification, embedding_size=16)


# every packed architecture (packing.PACKED_MODEL_TYPES): its tiny model and pad id
PACKED = {
    "albert": (tiny_albert, 0),
    "bert": (tiny_bert, 0),
    "electra": (tiny_electra, 0),
    "roberta": (tiny_roberta, 1),
}


def ner_data(n=24, seed=0):
    rng = random.Random(seed)
    lengths = [rng.choice([3, 5, 8, 12, 20, 31]) for _ in range(n)]
    return {
        "input_ids": [[2, *(rng.randint(5, 119) for _ in range(k - 2)), 3] for k in lengths],
        "token_type_ids": [[0] * k for k in lengths],
        "labels": [[-100, *(rng.randint(0, 2) for _ in range(k - 2)), -100] for k in lengths],
        "length": lengths,
    }


def test_pack_places_every_row_once_within_the_longest_width():
    lengths = [31, 5, 5, 20, 12, 3, 8, 8, 31, 2]
    rows = list(range(len(lengths)))
    bins = pack(lengths, rows)
    assert sorted(i for b in bins for i in b) == rows
    assert all(sum(lengths[i] for i in b) <= 31 for b in bins)
    assert len(bins) == -(-sum(lengths) // 31)  # these sizes pack with no bin to spare
    assert pack(lengths, rows) == bins  # deterministic


@pytest.mark.parametrize("arch", sorted(PACKED))
def test_packed_logits_and_loss_are_each_sequences_own(arch):
    build, pad_id = PACKED[arch]
    model, data = build().eval(), ner_data()
    rows = list(range(len(data["length"])))
    bins = pack(data["length"], rows)
    batch = packed_batch(data, bins, pad_id=pad_id, first=first_position(model))
    assert batch["attention_mask"].shape[:2] == (len(bins), 1)
    with torch.no_grad():
        packed = model(**batch)
        weighted, labelled = 0.0, 0
        for r, row in enumerate(bins):
            at = 0
            for i in row:
                n = data["length"][i]
                alone = model(
                    input_ids=torch.tensor([data["input_ids"][i]]),
                    labels=torch.tensor([data["labels"][i]]),
                )
                torch.testing.assert_close(packed.logits[r, at : at + n], alone.logits[0])
                count = sum(label != -100 for label in data["labels"][i])
                weighted, labelled = weighted + alone.loss.item() * count, labelled + count
                at += n
    assert packed.loss.item() == pytest.approx(weighted / labelled, rel=1e-5)


def test_a_packed_step_has_the_micro_batched_steps_gradient():
    data = ner_data(32, seed=1)
    rows = list(range(32))

    def gradient(parts, weights):
        model = tiny_bert().eval()  # no dropout: the same function both ways
        for weight, part in zip(weights, parts, strict=True):
            (model(**part).loss * weight).backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    split = batching.micro_batches(data["length"], rows, "bucketed", pass_tokens=4.0)
    micro = [batching.collate(data, part, 0, torch.long) for part in split]
    assert len(micro) > 1
    reference = gradient(micro, batching.label_weights(micro))
    packed = gradient([packed_batch(data, pack(data["length"], rows), 0)], [1.0])
    assert reference.keys() == packed.keys()
    for name in reference:
        torch.testing.assert_close(packed[name], reference[name], rtol=1e-4, atol=1e-6)


def test_every_packed_architecture_is_tested():
    from blurbflow.train.packing import PACKED_MODEL_TYPES

    assert set(PACKED) == set(PACKED_MODEL_TYPES)


def test_only_token_level_bert_style_cells_on_the_cpu_pack():
    tagger = tiny_bert()
    assert packs(tagger, True, CPU, "bucketed")
    assert not packs(tagger, True, CPU, "random")  # one padded pass, as asked
    assert not packs(tagger, False, CPU, "bucketed")  # a pooled head reads one position a row
    assert not packs(tagger, True, torch.device("cuda"), "bucketed")  # not measured on a GPU
    assert not packs(tiny_bert(BertForSequenceClassification), False, CPU, "bucketed")
    assert packs(tiny_roberta(), True, CPU, "bucketed")
    assert first_position(tiny_roberta()) == 2 and first_position(tagger) == 0
    deberta = DebertaV2ForTokenClassification(
        DebertaV2Config(vocab_size=120, hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
    )
    assert not packs(deberta, True, CPU, "bucketed")  # its embeddings read the mask too


def test_a_head_of_blurbflows_own_is_never_packed(tmp_path):
    from blurbflow.models.load import load_for_task
    from blurbflow.tasks import get_task

    tiny_bert().save_pretrained(tmp_path)
    bilstm = load_for_task(str(tmp_path), get_task("ncbidisease"), head="bilstm")
    linear = load_for_task(str(tmp_path), get_task("ncbidisease"))
    assert packs(linear, True, CPU, "bucketed")
    assert not packs(bilstm, True, CPU, "bucketed")  # its LSTM would cross the boundaries
