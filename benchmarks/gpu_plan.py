"""The GPU suite's parts in the order they run, each in fresh processes, with the seconds each is
expected to take on one H200, and the budget that skips a part which would not fit
(benchmarks/gpu.py). Torch-free: `gpu.py --plan` and the tests read it without a GPU.

Expected seconds, from the 2026-11-28 run (benchmarks/results/gpu-suite-h200-2026-11-28.json):
a fresh process with torch, transformers, CUDA and a BERT-base costs ~8 s (the `ragged` child:
19.1 s for 7.5 s of cuDNN warm-up and ~3 s of steps), a BERT-base step ~42 ms at the default
(770.7 samples/s), ModernBERT-base ~69 ms, the HF Trainer ~58 ms, inductor's first compile of
BERT-base 36.3 s (later processes find Triton's kernels in the suite's cache folder). Each row
runs 2 × STEPS steps."""

from __future__ import annotations

from dataclasses import dataclass

BUDGET_S = 300.0  # the suite's share of a 15-minute device session (machine start, install)
STEPS = 40  # steps per pass; 2 passes a row
EVAL_BATCHES = 40  # evaluation batches per pass (at 256: 10,240 sentences)


@dataclass(frozen=True)
class Part:
    name: str
    expected_s: float  # on one H200
    what: str
    processes: int = 1


# expected s = processes × ~8 s + the steps (+ compilation): the derivation on each line
# fmt: off
PARTS = (
    Part("default", 15, "ChemProt training and evaluation at the CUDA default (A of A/B/A)"),
    # 8 + 80 steps × 42 ms + 2 × 10,240 evaluated at ~15,000/s + first uses ~2
    Part("trainer", 17, "HF Trainer on the default's attention backend and bucket (B)"),
    # 8 + its imports 2 + 80 steps × 58 ms + first uses ~2
    Part("concurrent", 50, "1 (the second A), 2 and 4 processes training the default at once",
         processes=7),
    # K = 1: 12; 2: ~16 (steps ~2x slower while shared); 4: ~22 (processes start together)
    Part("encoders", 21, "BC5-chem tagging and ModernBERT-base at the default"),
    # 8 + 80 × 47 ms + ModernBERT's build ~2 + 80 × 69 ms + first uses ~2
    Part("checks", 20, "a default step profiled (device events), host syncs per step, demo cell"),
    # 8 + profile ~2 + 70 steps × 42 ms + the demo cell 6 (6.2 s on 2026-11-28)
    Part("graphs", 55, "compile: true, compile_mode: reduce-overhead (CUDA graphs), cold cache"),
    # 8 + the cold compile 36.3 + capture of 2 widths ~6 + 80 steps × ~20 ms
    Part("compiled", 35, "compile: true, torch.compile's default mode"),
    # 8 + compile ~23 (Triton's kernels in the suite's cache) + 80 × 25.6 ms
    Part("trainer_compiled", 40, "HF Trainer torch_compile=True, pad_to_multiple_of 64"),
    # 8 + imports 2 + compile ~26 (its own graphs, cached kernels) + 80 × ~30 ms
    Part("compile_cache", 45, "benchmarks/compile_cache.py: first step cold, warm, from artifacts",
         processes=3),
    # 3 × 8 + a cold compile ~15 of its model + 2 warm ~3: a guess (its script's own work)
)
# fmt: on
NAMES = tuple(p.name for p in PARTS)
BY_NAME = {p.name: p for p in PARTS}
CONCURRENT = (1, 2, 4)  # processes at once
CONCURRENT_SMOKE = (1, 2)  # on 2 CPU cores a third and fourth only wait


def expected_total(names=NAMES) -> float:
    return sum(BY_NAME[n].expected_s for n in names)


def fits(name: str, elapsed: float, budget: float) -> bool:
    """Whether part `name` is expected to end within `budget` seconds of the suite's start."""
    return elapsed + BY_NAME[name].expected_s <= budget


def timeout_for(name: str, elapsed: float, budget: float, smoke: bool = False) -> float:
    """Seconds part `name` may run: twice its expected time and 60 s more (a slow machine, a
    cold cache), never past the budget and 30 s of grace; a smoke run: only the latter."""
    left = budget + 30 - elapsed
    return max(1.0, left if smoke else min(2 * BY_NAME[name].expected_s + 60, left))


def table(budget: float = BUDGET_S) -> str:
    """The plan as `gpu.py --plan` prints it."""
    lines = [f"{'part':<17} {'processes':>9} {'expected s':>10}  what"]
    for p in PARTS:
        lines.append(f"{p.name:<17} {p.processes:>9} {p.expected_s:>10.0f}  {p.what}")
    total = expected_total()
    lines.append(f"{'total':<17} {'':>9} {total:>10.0f}  (budget {budget:.0f} s on one H200)")
    return "\n".join(lines)
