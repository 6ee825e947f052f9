"""Padding efficiency (real tokens / computed tokens) of training batches over the real BLURB
train sets, batch size 32, for blurbflow's length-bucketed batches and the baselines: fixed-length
padding (the papers), random dynamic batches, Hugging Face `group_by_length` (its own
LengthGroupedSampler) and a global sort.

    .venv/bin/python benchmarks/padding_efficiency.py
"""

from __future__ import annotations

import random

import torch
from transformers.trainer_pt_utils import LengthGroupedSampler

from blurbflow.models.load import load_tokenizer
from blurbflow.tasks import get_task
from blurbflow.train.batching import train_batches
from blurbflow.train.encode import encode_task, load_encoded

from common import MIRRORED_TASKS, WORK, minilm_path, parser, prepared

BATCH = 32


def chunk(order, size=BATCH):
    return [order[i : i + size] for i in range(0, len(order), size)]


def strategies(lengths: list[int], max_length: int, seed: int) -> dict[str, tuple[int, list]]:
    """name -> (width override or 0, one epoch's batches for this seed)."""
    rng = random.Random(seed)
    shuffled = list(range(len(lengths)))
    rng.shuffle(shuffled)
    generator = torch.Generator().manual_seed(seed)
    hf_order = list(LengthGroupedSampler(BATCH, lengths=lengths, generator=generator))
    return {
        "fixed-length padding (papers)": (max_length, chunk(shuffled)),
        "random dynamic batches": (0, chunk(shuffled)),
        "Hugging Face group_by_length": (0, chunk(hf_order)),
        "global sort": (0, chunk(sorted(range(len(lengths)), key=lengths.__getitem__))),
        "blurbflow length buckets": (0, train_batches(lengths, BATCH, random.Random(seed))),
    }


def mates_kept(first: list, second: list) -> float:
    """Share of an example's batch-mates that are again its batch-mates the next epoch
    (1.0: batches never change; a random shuffle gives about batch/N)."""
    mates = [{i: frozenset(b) for b in batches for i in b} for batches in (first, second)]
    kept = sum(len(mates[0][i] & mates[1][i]) - 1 for i in mates[0])
    return kept / sum(len(m) - 1 for m in mates[0].values())


def main() -> None:
    args = parser(__doc__).parse_args()
    tokenizer = load_tokenizer(minilm_path())
    totals: dict[str, list[int]] = {}
    print(f"{'task':12} {'train':>7}  " + "  ".join(f"{n[:14]:>14}" for n in strategies([1], 1, 0)))
    for task in MIRRORED_TASKS:
        spec = get_task(task)
        encoded = WORK / "encoded" / task
        if not (encoded / "meta.json").exists():
            encode_task(spec, prepared(task, args.mirror), tokenizer, spec.max_length, encoded)
        lengths = load_encoded(encoded, "train")["length"]
        row = []
        for name, (width, batches) in strategies(lengths, spec.max_length, seed=1).items():
            computed = sum(len(b) * (width or max(lengths[i] for i in b)) for b in batches)
            real, all_computed = totals.setdefault(name, [0, 0])
            totals[name] = [real + sum(lengths), all_computed + computed]
            row.append(sum(lengths) / computed)
        print(f"{task:12} {len(lengths):7d}  " + "  ".join(f"{r:14.3f}" for r in row))
        if task == "bc2gm":
            epoch1, epoch2 = (strategies(lengths, spec.max_length, s) for s in (1, 2))
            kept = {name: mates_kept(epoch1[name][1], epoch2[name][1]) for name in epoch1}
    print("\nall train sets: padding efficiency (real / computed tokens); bc2gm batch-mates kept")
    print("from one epoch to the next (randomness: lower is more random)")
    for name, (real, computed) in totals.items():
        print(f"  {name:32} {real / computed:.3f}   {kept[name]:.3f}")


if __name__ == "__main__":
    main()
