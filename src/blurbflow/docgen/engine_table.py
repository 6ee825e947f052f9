"""docs/engine.md's table of what `engine: auto` runs on the CPU and on CUDA, read from the code
that decides it (blurbflow.train.engine.resolve, the optimizer's kernel choice, packing's rule),
so the page cannot describe a policy the code no longer has. Each setting's reason, the H200
figures it was chosen by, is written here once, beside the setting."""

from __future__ import annotations

from types import SimpleNamespace

from blurbflow.docgen.options import COMMAND

PAGE = "docs/engine.md"
MARKS = ("<!-- BEGIN engine policy", "<!-- END engine policy -->")
RECIPE_EVAL_BATCH = 64  # the recipe option's default, the floor of `eval_batch_size: auto`
LENGTHS = (128, 512)  # input lengths the evaluation batch is shown at

# setting → why its default (one H200, bf16, BERT-base, batch 32, training samples/s unless
# said; 2026-11-28, benchmarks/README.md "GPU suite"). Every setting the table shows has one.
WHY = {
    "attention": "cuDNN builds a graph per input shape: training 160.8 → 652.6, evaluation 524 → "
    "4,204, ModernBERT-base 303.6 → 482.8; ChemProt's 3 epochs 491 s → 102 s",
    "shapes": "BC5-chem, cuDNN off: one pass 650.4, micro-batches 538.6; in fp32 micro-batches "
    "706.4, one pass 686.1",
    "optimizer": "1.37 ms a step against foreach's 3.9; 739.4 vs 652.6 end to end",
    "prefetch": "664.4 with, 669.1 without: no gain at this size",
    "pad_multiple": "training 664.4 → 770.7, evaluation 3,475 → 6,770",
    "eval_batch_size": "evaluation 3,475 at 64 → 15,073 at 256",
    "compile": "opt-in (below)",
}
# what a value means where its name does not say it
SAYS = {
    "torch": "torch's own choice",
    "no_cudnn": "cuDNN's SDPA off in the cell",
    "fused": "torch's fused AdamW kernel",
}


class _TokenModel:
    """A transformers token classifier of a type that packs, as blurbflow.train.packing asks."""

    config = SimpleNamespace(model_type="bert")

    def forward(self, input_ids=None, attention_mask=None, position_ids=None): ...


def _shown(value) -> str:
    if value is None:
        return "the recipe's"
    word = ("on" if value else "off") if isinstance(value, bool) else value
    return f"`{word}`" + (f" ({SAYS[value]})" if value in SAYS else "")


def _cases(pairs: list[tuple[str, object]]) -> str:
    """`when, when: value; when: value`, cases of one value joined; one value alone if all agree."""
    groups: dict = {}
    for when, value in pairs:
        whens = groups.setdefault(value, [])
        if when not in whens:
            whens.append(when)
    if len(groups) == 1:
        return _shown(pairs[0][1])
    return "; ".join(f"{', '.join(whens)}: {_shown(value)}" for value, whens in groups.items())


def policies() -> dict[str, dict[str, str]]:
    """setting → {"CPU": …, "CUDA": …}: what `auto` runs there, from the code."""
    import torch

    from blurbflow.train import engine, optim, packing
    from blurbflow.train.device import choose_precision

    def run(device, precision, batching="bucketed", token_level=False, length=None):
        packs = packing.packs(_TokenModel(), token_level, device, batching)
        batch = RECIPE_EVAL_BATCH if length else None
        return engine.resolve(
            engine.Settings(), device, precision, batching, packs, False, length, batch
        )

    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    fp32 = choose_precision("bf16", cpu)  # what a CPU cell runs whatever its recipe asks
    token = f"token tasks of {', '.join(f'`{t}`' for t in packing.PACKED_MODEL_TYPES)} models"
    shapes = {
        "CPU": [
            (token, run(cpu, fp32, token_level=True)),
            ("other tasks", run(cpu, fp32)),
            ("`batching: random`", run(cpu, fp32, "random")),
        ],
        "CUDA": [
            ("bf16", run(cuda, "bf16")),
            ("fp16", run(cuda, "fp16")),
            ("`batching: random`", run(cuda, "fp32", "random")),
            ("fp32", run(cuda, "fp32", token_level=True)),
        ],
    }
    table: dict[str, dict[str, str]] = {key: {} for key in WHY}
    for name, device in (("CPU", cpu), ("CUDA", cuda)):
        cases = shapes[name]
        usual = cases[0][1] if name == "CUDA" else cases[1][1]  # a bf16 cell; a CPU sentence task
        kernel = optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
        kernel.kernel = usual.optimizer_kernel
        table["attention"][name] = _shown(usual.attention_backend)
        table["shapes"][name] = _cases([(when, p.batch_shapes) for when, p in cases])
        table["optimizer"][name] = _shown(kernel.kernel_for(device, torch.float32))
        table["prefetch"][name] = _shown(usual.prefetch)
        table["pad_multiple"][name] = _cases(
            [(f"`{p.batch_shapes}`", p.pad_multiple) for _, p in cases]
        )
        precision = "bf16" if name == "CUDA" else fp32
        sizes = [(f"{n} tokens", run(device, precision, length=n).eval_batch_size) for n in LENGTHS]
        table["eval_batch_size"][name] = _cases(sizes)
        if name == "CUDA" and any(size for _, size in sizes):
            table["eval_batch_size"][name] += (
                f" ({engine.EVAL_TOKENS:,} tokens a batch, never below the recipe's)"
            )
        table["compile"][name] = _shown(usual.compiled)
    return table


def engine_block() -> str:
    rows = [
        f"{MARKS[0]}: generated from blurbflow.train.engine by `{COMMAND}` -->",
        "| setting | CPU | CUDA | why (one H200, bf16, BERT-base, batch 32, samples/s) |",
        "|---|---|---|---|",
    ]
    for setting, devices in policies().items():
        rows.append(f"| `{setting}` | {devices['CPU']} | {devices['CUDA']} | {WHY[setting]} |")
    return "\n".join([*rows, MARKS[1]]) + "\n"
