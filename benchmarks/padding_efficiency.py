"""Padding efficiency (real tokens / computed tokens) and seed-to-seed batch-mate overlap of the
training batches over the real BLURB train sets, for blurbflow's batches (`bucketed`: random
batches run as length-sorted micro-batches) and the baselines: fixed-length padding (the papers),
random dynamic batches, megabatches of 2 batches sorted by length, the jittered global length sort
blurbflow used before, Hugging Face `group_by_length` (its LengthGroupedSampler) and a global sort.

Overlap: the share of an example's batch-mates in seed 1's first epoch that are again its
batch-mates in seed 2's (random shuffling gives about (batch − 1)/(N − 1)); the target is at most
1.5 × random shuffling's on every set, with padding efficiency ≥ 0.95 over the 11 sets.

    .venv/bin/python benchmarks/padding_efficiency.py [--batch-size 32]
    .venv/bin/python benchmarks/padding_efficiency.py --smoke  # generated sets, a tiny vocabulary
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import torch
from transformers.trainer_pt_utils import LengthGroupedSampler

from blurbflow.models.load import load_tokenizer
from blurbflow.options import InputOptions
from blurbflow.tasks import get_task
from blurbflow.train.batching import micro_batches, pass_cost, train_batches
from blurbflow.train.encode import encode_task, load_encoded
from blurbflow.train.packing import pack

from common import MIRRORED_TASKS, WORK, minilm_path, parser, prepared, smoke_data, tiny_model

OURS, RANDOM = "blurbflow bucketed", "random dynamic"
PACKED = "blurbflow as run"  # token-level sets packed (train/packing.py, CPU), others as OURS
PASS = pass_cost("cpu", 768)  # the split a BERT-base cell gets on the CPU (--pass-tokens)


def chunk(order, size):
    return [order[i : i + size] for i in range(0, len(order), size)]


def megabatches(lengths, size, rng, k=2):
    order = list(range(len(lengths)))
    rng.shuffle(order)
    out = []
    for start in range(0, len(order), k * size):
        out += chunk(sorted(order[start : start + k * size], key=lengths.__getitem__), size)
    rng.shuffle(out)
    return out


def strategies(
    lengths: list[int],
    max_length: int,
    seed: int,
    size: int,
    pass_tokens: float = PASS,
    token_level: bool = False,
) -> dict:
    """name -> (width override or 0, one epoch's batches, each a list of forward passes)."""
    rng = random.Random(seed)
    shuffled = list(range(len(lengths)))
    rng.shuffle(shuffled)
    generator = torch.Generator().manual_seed(seed)
    hf_order = list(LengthGroupedSampler(size, lengths=lengths, generator=generator))
    jitter = random.Random(seed)
    keys = [n * jitter.uniform(0.97, 1.03) for n in lengths]
    jittered = chunk(sorted(range(len(lengths)), key=keys.__getitem__), size)
    jitter.shuffle(jittered)
    ours = train_batches(lengths, size, random.Random(seed))
    plain = [[b] for b in chunk(shuffled, size)]
    found = {
        "fixed-length (papers)": (max_length, plain),
        RANDOM: (0, plain),
        "megabatch k=2": (0, [[b] for b in megabatches(lengths, size, random.Random(seed))]),
        "jittered sort (old)": (0, [[b] for b in jittered]),
        "HF group_by_length": (0, [[b] for b in chunk(hf_order, size)]),
        "global sort": (
            0,
            [[b] for b in chunk(sorted(range(len(lengths)), key=lengths.__getitem__), size)],
        ),
        OURS: (0, [micro_batches(lengths, b, "bucketed", pass_tokens=pass_tokens) for b in ours]),
    }
    if token_level:  # one pass over rows as wide as the batch's longest sequence
        found[PACKED] = (-1, [pack(lengths, b) for b in ours])
    else:
        found[PACKED] = found[OURS]
    return found


def mates_kept(first: list, second: list) -> float:
    """Share of an example's batch-mates that are again its batch-mates in the other epoch."""
    mates = [{i: frozenset(b) for b in batches for i in b} for batches in (first, second)]
    kept = sum(len(mates[0][i] & mates[1][i]) - 1 for i in mates[0])
    return kept / max(1, sum(len(m) - 1 for m in mates[0].values()))


def main() -> None:
    cli = parser(__doc__)
    cli.add_argument("--batch-size", type=int, default=32)
    cli.add_argument("--pass-tokens", type=float, default=PASS, help="cost of a pass, in tokens")
    args = cli.parse_args()
    with tempfile.TemporaryDirectory(prefix="blurbflow-padding-") as tmp:
        report(args, Path(tmp) if args.smoke else None)


def report(args, smoke: Path | None) -> None:
    """The table; `smoke`: a scratch folder for the generated sets and the tiny vocabulary."""
    size = args.batch_size
    tasks = list(MIRRORED_TASKS)
    tokenizer = load_tokenizer(tiny_model(smoke, tasks) if smoke else minilm_path())
    names = list(strategies([1], 1, 0, size))
    totals = {name: [0, 0] for name in names}
    print(
        f"batch size {size}, pass cost {args.pass_tokens:g} tokens; per task: padding efficiency, "
        "then seed 1 vs seed 2 batch-mate overlap"
    )
    print(
        f"{'task':12} {'train':>6} "
        + " ".join(f"{n[:11]:>11}" for n in names)
        + f" | overlap: {'ours':>7} {'random':>7} {'ratio':>5} {'mega2':>6} {'old':>6}"
    )
    worst = 0.0
    for task in tasks:
        spec = get_task(task)
        encoded = (smoke or WORK) / "encoded" / task
        if not (encoded / "meta.json").exists():
            inputs = InputOptions(max_length=spec.max_length)
            data = smoke_data(task, smoke) if smoke else prepared(task, args.mirror)
            encode_task(spec, data, tokenizer, inputs, encoded)
        lengths = load_encoded(encoded, "train")["length"]
        seed1, seed2 = (
            strategies(lengths, spec.max_length, s, size, args.pass_tokens, spec.kind.token_level)
            for s in (1, 2)
        )
        row = []
        for name, (width, batches) in seed1.items():
            if width < 0:  # packed: every row of a batch as wide as its longest sequence
                computed = sum(len(b) * max(lengths[i] for p in b for i in p) for b in batches)
            else:
                computed = sum(
                    len(p) * (width or max(lengths[i] for i in p)) for b in batches for p in b
                )
            totals[name][0] += sum(lengths)
            totals[name][1] += computed
            row.append(sum(lengths) / computed)
        overlap = {
            name: mates_kept(
                [sum(b, []) for b in seed1[name][1]], [sum(b, []) for b in seed2[name][1]]
            )
            for name in (OURS, RANDOM, "megabatch k=2", "jittered sort (old)")
        }
        ratio = overlap[OURS] / overlap[RANDOM]
        worst = max(worst, ratio)
        print(
            f"{task:12} {len(lengths):6d} "
            + " ".join(f"{r:11.3f}" for r in row)
            + f" | {'':8} {overlap[OURS]:7.4f} {overlap[RANDOM]:7.4f} {ratio:5.2f}"
            f" {overlap['megabatch k=2']:6.3f} {overlap['jittered sort (old)']:6.3f}"
        )
    print(
        f"{'all 11 sets':19} "
        + " ".join(f"{real / comp:11.3f}" for real, comp in totals.values())
        + f" | worst overlap ratio ours/random {worst:.2f}"
    )


if __name__ == "__main__":
    main()
