"""Training batches whose composition the seed governs as fully as random shuffling does, computed
with little padding (recipe option `batching`).

Every epoch draws plain random batches (a seeded shuffle, cut every `batch_size`). Bucketing by
length would make batch-mates nearly the same for every seed (sorting, even with jitter or within
megabatches, pairs examples by length: 72-88% of BIOSSES batch-mate pairs recur across seeds), and
Tinn et al.'s stability studies measure exactly that seed-to-seed variance. Padding is saved
instead inside each batch: with `batching: bucketed` a batch is run as up to MICRO_BATCHES
length-sorted micro-batches, split where padded tokens plus a per-pass cost are least (a pass
costs more than its tokens: `pass_cost`), their gradients summed with weights that give the whole
batch's mean loss (see `label_weights`); the optimizer step is the batch's. `batching: random`
runs each batch as one padded forward pass.
benchmarks/padding_efficiency.py measures both figures on the real BLURB train sets.
"""

from __future__ import annotations

import random

import torch

from blurbflow.options import choices
from blurbflow.train.encode import IGNORE

BATCHINGS = choices("batching")  # the option's allowed values, written once (blurbflow.options)
MICRO_BATCHES = 8  # 11 BLURB sets, batch 32, BERT-base on CPU: 0.954 of tokens real (1 pass: 0.418)
GPU_PASS_TOKENS = 2048  # below a few thousand tokens a GPU pass is launch-bound, not token-bound


def pass_cost(device_type: str, hidden_size: int) -> float:
    """What one more forward/backward pass costs, in padded tokens: on the CPU 16 × (768 /
    width)² (BERT-base: 16; MiniLM-L6: 64; the 128-wide demo model: 576, where splitting short
    batches would cost more than it saves). Measured on 2 CPU cores (2026-11-25), a pass's own
    cost (mostly its weight-gradient traffic, see train/sparse.py) is 50-110 tokens' work
    for MiniLM-L6 and BERT-base alike, but the time is flat around the best split: BERT-base over
    the 11 BLURB sets takes 1.2% longer (modelled) split at 16 than at 52, which would leave 0.92
    of tokens real instead of 0.954; a MiniLM-L6 epoch ran faster at 64 than at 32, 128 or 256."""
    if device_type == "cuda":
        return float(GPU_PASS_TOKENS)
    return 16.0 * (768 / max(int(hidden_size), 1)) ** 2


def train_batches(lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """One epoch's batches: a random permutation cut every `batch_size` (the last may be short)."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def micro_batches(
    lengths: list[int],
    rows: list[int],
    batching: str = "bucketed",
    parts: int = MICRO_BATCHES,
    pass_tokens: float = 0.0,
) -> list[list[int]]:
    """The forward passes that compute one batch: the batch itself (`random`), or its rows sorted
    by length and cut into at most `parts` runs so that Σ rows × longest + `pass_tokens` × runs
    is least (`bucketed`)."""
    if batching not in BATCHINGS:
        raise ValueError(f"batching: unknown {batching!r}; use one of {', '.join(BATCHINGS)}")
    if batching == "random" or len(rows) <= 1:
        return [list(rows)]
    ranked = sorted(rows, key=lambda i: (lengths[i], i))
    size = [lengths[i] for i in ranked]
    n, parts = len(ranked), min(parts, len(ranked))
    # cost[g][j]: least padded tokens for the first j rows in g runs; cut[g][j]: where run g starts
    inf = float("inf")
    cost = [[0.0] + [inf] * n] + [[inf] * (n + 1) for _ in range(parts)]
    cut = [[0] * (n + 1) for _ in range(parts + 1)]
    for g in range(1, parts + 1):
        for j in range(g, n + 1):
            cost[g][j], cut[g][j] = min(
                (cost[g - 1][i] + (j - i) * size[j - 1], i) for i in range(g - 1, j)
            )
    g = min(range(1, parts + 1), key=lambda k: (cost[k][n] + pass_tokens * k, k))
    out, j = [], n
    while g:
        i = cut[g][j]
        out.append(ranked[i:j])
        j, g = i, g - 1
    return out[::-1]


def label_weights(parts: list[dict]) -> list[float]:
    """Each micro-batch's share of the batch's labels (tokens with a label for tagging, else
    label entries), so Σ share × micro-batch mean loss = the whole batch's mean loss."""
    counts = [int((part["labels"] != IGNORE).sum()) for part in parts]
    total = sum(counts) or 1
    return [c / total for c in counts]


def eval_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def padded(column, rows: list[int], width: int, fill) -> torch.Tensor:
    """`rows` of a list column as one (len(rows), width) long tensor padded with `fill`: gathered
    at once from a RaggedColumn's flat values (train/encode.py), else row by row."""
    if hasattr(column, "padded"):
        return torch.from_numpy(column.padded(rows, width, fill)).long()
    out = torch.full((len(rows), width), fill, dtype=torch.long)
    for r, i in enumerate(rows):
        out[r, : len(column[i])] = torch.tensor(column[i], dtype=torch.long)
    return out


def collate(
    data: dict[str, list], indices: list[int], pad_id: int, label_dtype
) -> dict[str, torch.Tensor]:
    """The padded batch of rows `indices`: one tensor per column, as wide as its longest row."""
    ids = data["input_ids"]
    if hasattr(ids, "lengths"):
        lengths = torch.from_numpy(ids.lengths(indices))
    else:
        lengths = torch.tensor([len(ids[i]) for i in indices])
    width = int(lengths.max())
    batch = {"input_ids": padded(ids, indices, width, pad_id)}
    batch["attention_mask"] = (torch.arange(width)[None, :] < lengths[:, None]).long()
    if "token_type_ids" in data:
        batch["token_type_ids"] = padded(data["token_type_ids"], indices, width, 0)
    if "labels" in data:
        batch["labels"] = padded(data["labels"], indices, width, IGNORE)
    else:
        batch["labels"] = torch.tensor([data["label"][i] for i in indices], dtype=label_dtype)
    return batch
