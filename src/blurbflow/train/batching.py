"""Dynamic padding with length-bucketed batches: sort the whole set by length times a random
jitter, cut batches, shuffle their order. Neighbours in length share a batch, so padding stays
near a global sort's, while the jitter re-draws which similar-length examples go together each
epoch and the batch order is random (Hugging Face's group_by_length sorts only within pools of
50 batches, which pads more)."""

from __future__ import annotations

import random

import torch

from blurbflow.train.encode import IGNORE

LENGTH_JITTER = 0.03  # sort key = length × U(1 − j, 1 + j); benchmarks/padding_efficiency.py


def train_batches(
    lengths: list[int], batch_size: int, rng: random.Random, jitter: float = LENGTH_JITTER
) -> list[list[int]]:
    keys = [n * rng.uniform(1 - jitter, 1 + jitter) for n in lengths]
    order = sorted(range(len(lengths)), key=keys.__getitem__)
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    rng.shuffle(batches)
    return batches


def eval_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def collate(
    data: dict[str, list], indices: list[int], pad_id: int, label_dtype
) -> dict[str, torch.Tensor]:
    width = max(len(data["input_ids"][i]) for i in indices)

    def pad(rows, value, dtype=torch.long):
        out = torch.full((len(indices), width), value, dtype=dtype)
        for r, i in enumerate(indices):
            out[r, : len(rows[i])] = torch.tensor(rows[i], dtype=dtype)
        return out

    batch = {"input_ids": pad(data["input_ids"], pad_id)}
    batch["attention_mask"] = (
        torch.arange(width)[None, :]
        < torch.tensor([len(data["input_ids"][i]) for i in indices])[:, None]
    ).long()
    if "token_type_ids" in data:
        batch["token_type_ids"] = pad(data["token_type_ids"], 0)
    if "labels" in data:
        batch["labels"] = pad(data["labels"], IGNORE)
    else:
        batch["labels"] = torch.tensor([data["label"][i] for i in indices], dtype=label_dtype)
    return batch
