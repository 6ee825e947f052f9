"""The GPU suite's models and data (benchmarks/gpu.py): a model built from the published
checkpoint's config (random weights, nothing downloaded), or a tiny one of the same
architecture for `--smoke`, and generated instances whose lengths follow a real train set's.
A helper of gpu.py, no benchmark."""

from __future__ import annotations

import numpy as np
import torch
from gpu_policy import MAX_LENGTH
from transformers import (
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    BertConfig,
    ModernBertConfig,
)

from blurbflow.tasks import get_task

# uncased WordPiece lengths with [CLS] and [SEP] of the train sets (benchmarks/gpu.py --lengths
# computes them from ../shared/blurb-raw): ChemProt (18,035 sentences, entities dummified) at
# quantiles 0, 5, …, 100 %; BC5-chem (4,560 sentences, mean 35.7) at 0, 1, …, 100 %
CHEMPROT_LENGTHS = (11, 28, 32, 36, 39, 42, 45, 49, 52, 55, 58, 62, 65, 69, 74, 80, 87, 95, 109)
CHEMPROT_LENGTHS += (138, 352)
BC5CHEM_LENGTHS = (4, 9, 11, 12, 13, 14, 15, 16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 20, 21, 21,
                   21, 22, 22, 22, 23, 23, 23, 24, 24, 25, 25, 25, 26, 26, 26, 27, 27, 27, 28, 28,
                   28, 29, 29, 29, 30, 30, 31, 31, 31, 32, 32, 32, 33, 33, 33, 34, 34, 35, 35, 35,
                   36, 36, 37, 37, 38, 38, 39, 39, 40, 40, 41, 41, 42, 42, 43, 44, 44, 45, 46, 47,
                   47, 48, 49, 50, 51, 52, 53, 54, 55, 57, 59, 60, 63, 65, 66, 69, 73, 78, 84, 99,
                   239)  # fmt: skip
TASKS = {"chemprot": CHEMPROT_LENGTHS, "bc5chem": BC5CHEM_LENGTHS}
SPEC = {"chemprot": get_task("chemprot"), "bc5chem": get_task("bc5chem")}
LABELS = {"chemprot": len(SPEC["chemprot"].labels), "bc5chem": 3}  # BIO tags of one type
SMOKE = dict(vocab_size=1000, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=64)  # fmt: skip


def config_of(model: str, labels: int, smoke: bool = False):
    """The model's config with the published checkpoint's values (written here: no hub), or a
    tiny one of the same architecture (`smoke`)."""
    if model == "bert-base":  # a smoke run without dropout: on the CPU it is half of a step
        tiny = dict(SMOKE, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        return BertConfig(num_labels=labels, **(tiny if smoke else {}))
    if model == "modernbert-base":  # answerdotai/ModernBERT-base's config.json
        sizes = dict(vocab_size=50368, hidden_size=768, intermediate_size=1152,
                     num_hidden_layers=22, num_attention_heads=12, local_attention=128,
                     max_position_embeddings=8192)  # fmt: skip
        if smoke:
            sizes.update(SMOKE, intermediate_size=64, local_attention=16, num_hidden_layers=3)
            sizes.update(pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1)
            sizes.update(sep_token_id=2)
        return ModernBertConfig(
            num_labels=labels, global_attn_every_n_layers=3, global_rope_theta=160000.0,
            local_rope_theta=10000.0, classifier_pooling="mean", norm_eps=1e-5, **sizes
        )  # fmt: skip
    raise ValueError(f"unknown model {model!r}; use bert-base or modernbert-base")


def generated(task: str, n: int, vocab: int, seed: int) -> dict:
    """`n` instances: [CLS] random ids [SEP] with the task's train lengths cut at MAX_LENGTH,
    random labels (one per instance; per token for bc5chem, [CLS]/[SEP] unlabelled)."""
    rng = np.random.default_rng(seed)
    quantiles = TASKS[task]
    lengths = np.interp(rng.random(n), np.linspace(0, 1, len(quantiles)), quantiles)
    lengths = np.minimum(lengths.round().astype(int), MAX_LENGTH)
    low = min(1000, vocab // 2)  # above BERT's special and unused ids
    ids = [[101 % vocab, *rng.integers(low, vocab, k - 2).tolist(), 102 % vocab] for k in lengths]
    data = {"input_ids": ids, "length": [len(row) for row in ids]}
    if task == "bc5chem":
        data["labels"] = [[-100, *rng.integers(0, 3, len(r) - 2).tolist(), -100] for r in ids]
        data["n_words"] = [len(r) - 2 for r in ids]
    else:
        data["label"] = rng.integers(0, LABELS[task], n).tolist()
    return data


def build_model(row: dict, device: torch.device, smoke: bool):
    config = config_of(row["model"], LABELS[row["task"]], smoke)
    auto = AutoModelForTokenClassification if row["task"] == "bc5chem" else None
    torch.manual_seed(0)
    with device:  # initialised where it runs: BERT-base's init on the CPU takes seconds
        model = (auto or AutoModelForSequenceClassification).from_config(config)
    return model.to(device), config
