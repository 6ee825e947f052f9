"""Dynamic padding with length-grouped batches: shuffle, sort within large pools, cut batches,
shuffle the batches. Padding stays low while batch composition stays random across epochs."""

from __future__ import annotations

import random

import torch

from blurbflow.train.encode import IGNORE

POOL_BATCHES = 50  # as Hugging Face's group_by_length mega-batches


def train_batches(lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    order = list(range(len(lengths)))
    rng.shuffle(order)
    pool = batch_size * POOL_BATCHES
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i], reverse=True)
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
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
