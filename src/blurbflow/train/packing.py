"""Token-level tasks (NER, PICO) on the CPU: a random batch computed as one forward pass over
packed rows instead of length-sorted micro-batches (train/batching.py).

The batch's sequences are placed first-fit by decreasing length into rows as wide as its longest
one; each keeps its own position ids (restarting at 0) and attends only to itself (a
block-diagonal mask), so every token's logits are those of its sequence alone — the same
function as one padded row per sequence, up to float rounding. A tagging loss is a mean over
labelled tokens, which packing leaves as it is. Sequence-level heads (classification, RE, QA)
read one pooled position per row, so they are never packed. On bc5chem (batch 32) a batch packs
into 7% padding in one pass, where MiniLM-L6 micro-batches took 4.1 passes for 13%.

Packed: models whose embeddings take absolute `position_ids` and whose attention takes an additive
(rows, 1, width, width) mask: BERT, ELECTRA, ALBERT (positions from 0) and RoBERTa (from its pad
id + 1, as its embeddings count). Not packed: DeBERTa-v2 (its relative positions would be the same
inside each packed sequence, but its model hands the attention mask to the embeddings too, which
take only (rows, width)) and ModernBERT (its own unpadding needs FlashAttention's variable-length
kernels, a GPU). On a GPU it is not enabled yet: no GPU figure shows it faster there.
"""

from __future__ import annotations

import inspect

import numpy as np
import torch

from blurbflow.train.encode import IGNORE

# model type -> whether its position ids start after the pad id (RoBERTa's embeddings)
PACKED_MODEL_TYPES = {"bert": False, "electra": False, "albert": False, "roberta": True}


def first_position(model) -> int:
    """The position id of a sequence's first token in this model's embeddings."""
    config = model.config
    return config.pad_token_id + 1 if PACKED_MODEL_TYPES.get(config.model_type) else 0


def packs(model, token_level: bool, device: torch.device, batching_mode: str) -> bool:
    """Whether this cell's training batches are packed: a transformers token classifier (a
    BiLSTM or other head of blurbflow's would run across the packed sequences' boundaries)."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    return (
        token_level
        and batching_mode == "bucketed"
        and device.type == "cpu"
        and model_type in PACKED_MODEL_TYPES
        and "position_ids" in inspect.signature(model.forward).parameters
    )


def pack(lengths, rows: list[int]) -> list[list[int]]:
    """`rows` placed first-fit by decreasing length into bins of the longest one's width."""
    ranked = sorted(rows, key=lambda i: (-lengths[i], i))
    width = lengths[ranked[0]]
    bins: list[list[int]] = []
    room: list[int] = []
    for i in ranked:
        n = lengths[i]
        at = next((b for b, free in enumerate(room) if free >= n), None)
        if at is None:
            bins.append([i])
            room.append(width - n)
        else:
            bins[at].append(i)
            room[at] -= n
    return bins


def packed_batch(
    data: dict, bins: list[list[int]], pad_id: int, dtype=torch.float32, first: int = 0
) -> dict:
    """The model inputs of packed rows: ids, labels, per-sequence position ids from `first`
    (first_position), token type ids when the data has them, and an additive (rows, 1, width,
    width) attention mask; a pad position attends to itself only (a row of -inf gives NaN)."""
    ids = data["input_ids"]
    width = max(sum(len(ids[i]) for i in row) for row in bins)
    shape = (len(bins), width)
    input_ids = np.full(shape, pad_id, dtype=np.int64)
    labels = np.full(shape, IGNORE, dtype=np.int64)
    positions = np.zeros(shape, dtype=np.int64)
    types = np.zeros(shape, dtype=np.int64)
    segment = np.full(shape, -1, dtype=np.int64)  # which sequence a position belongs to
    for r, row in enumerate(bins):
        at = 0
        for k, i in enumerate(row):
            n = len(ids[i])
            input_ids[r, at : at + n] = ids[i]
            labels[r, at : at + n] = data["labels"][i]
            positions[r, at : at + n] = np.arange(first, first + n)
            if "token_type_ids" in data:
                types[r, at : at + n] = data["token_type_ids"][i]
            segment[r, at : at + n] = k
            at += n
    seg = torch.from_numpy(segment)
    same = seg[:, :, None] == seg[:, None, :]
    real = (seg >= 0)[:, :, None]
    allowed = (same & real) | torch.eye(width, dtype=torch.bool)[None]
    mask = torch.zeros((len(bins), 1, width, width), dtype=dtype)
    mask.masked_fill_(~allowed[:, None], torch.finfo(dtype).min)
    batch = {
        "input_ids": torch.from_numpy(input_ids),
        "attention_mask": mask,
        "position_ids": torch.from_numpy(positions),
        "labels": torch.from_numpy(labels),
    }
    if "token_type_ids" in data:
        batch["token_type_ids"] = torch.from_numpy(types)
    return batch
