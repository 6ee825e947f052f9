"""The GPU suite's markdown table and its targets (issue "GPU first": bf16 on an H100/H200),
from the rows benchmarks/gpu.py measured. A helper of gpu.py, no benchmark."""

from __future__ import annotations

CHEMPROT = {"train": 18035, "dev": 11268, "test": 15745}
DEFAULT = {"attention": "no_cudnn", "shapes": "padded", "pad_multiple": 1}  # the CUDA default
COLUMNS = ("what", "task", "model", "precision", "attention", "shapes", "optimizer",
           "samples/s", "step ms", "warm-up s", "peak MiB")  # fmt: skip


def _cell(row: dict, column: str) -> str:
    value = {
        "samples/s": row.get("samples_per_s"),
        "step ms": row.get("step_ms"),
        "warm-up s": row.get("warmup_s"),
        "peak MiB": row.get("peak_memory_mb"),
        "optimizer": row.get("optimizer_kernel") or row.get("optimizer"),
        "precision": row.get("runs_as", row.get("precision")),
    }.get(column, row.get(column))
    shapes = row.get("shapes")
    if column == "shapes" and row.get("pad_multiple", 1) > 1:
        value = f"{shapes} ×{row['pad_multiple']}"
    if column == "shapes" and row.get("group_by_length"):
        value = f"{shapes} (group_by_length)"
    if column == "shapes" and row.get("compile"):
        value = f"{value}, compiled"
    if column == "shapes" and row.get("prefetch") is False:
        value = f"{value}, no prefetch"
    if column == "what" and row.get("eval_batch_size"):
        value = f"eval ({row['eval_batch_size']})"
    return "" if value is None else f"{value:,}" if isinstance(value, float) else str(value)


def markdown(result: dict) -> str:
    lines = [
        f"GPU suite on {result['device']}: torch {result['torch']} (CUDA {result['cuda']}, "
        f"cuDNN {result['cudnn']}), transformers {result['transformers']}; batch "
        f"{result['batch_size']}, length ≤ {result['max_length']}; "
        f"{result['seconds'].get('total')} s" + (" (smoke)" if result["smoke"] else ""),
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(_cell(r, c) for c in COLUMNS) + " |" for r in result["rows"]]
    for p in result.get("profile", []):
        lines.append(
            f"\nOne step, {p['shapes']}: {p['step_ms']} ms wall, device busy "
            f"{p['device_busy_ms']} ms, {p['device_ops']} device operations, "
            f"{p['host_syncs']} host syncs in three steps; heaviest host operators (ms): "
            + ", ".join(f"{k} {v}" for k, v in p["top_host_ops_ms"].items())
        )
    if cell := result.get("cell"):
        lines.append(
            f"\nDemo cell {cell['cell']}: {cell['status']} on {cell['device']} "
            f"({cell['precision']}, {cell['attention_backend']}, {cell['batch_shapes']}), "
            f"{cell['epochs']} epochs in {cell['wall_seconds']} s, dev {cell['dev']:.2f}, "
            f"result.json {'verified' if cell['verified'] else cell['verify_problem']}"
        )
    if result.get("targets"):
        lines += ["", "| target | wanted | measured | met |", "|---|---|---|---|"]
        for t in result["targets"]:
            met = "" if t["met"] is None else "yes" if t["met"] else "no"
            lines.append(f"| {t['target']} | {t['wanted']} | {t['measured']} | {met} |")
    if result.get("skipped"):
        lines.append(f"\nSkipped (time budget): {', '.join(result['skipped'])}")
    return "\n".join(lines) + "\n"


def _find(rows, what="train", **match) -> dict | None:
    for row in rows:
        if row.get("what") == what and all(
            row.get(k, DEFAULT.get(k)) == v for k, v in match.items()
        ):
            return row
    return None


def targets(result: dict) -> list[dict]:
    """The targets against the default policy's rows (bf16, cuDNN off, one padded pass)."""
    rows, out = result["rows"], []
    base = dict(precision="bf16", **DEFAULT)

    def add(target, wanted, measured, ok):
        out.append({"target": target, "wanted": wanted, "measured": measured, "met": ok})

    train = _find(rows, task="chemprot", model="bert-base", optimizer=None, prefetch=None, **base)
    evals = _find(rows, "eval", task="chemprot", model="bert-base", **base)
    if train:
        add("ChemProt training, samples/s", "≥ 2,000", train["samples_per_s"],
            train["samples_per_s"] >= 2000)  # fmt: skip
    if evals:
        add("ChemProt evaluation, samples/s", "≥ 10,000", evals["samples_per_s"],
            evals["samples_per_s"] >= 10000)  # fmt: skip
    if train and evals:
        scored = CHEMPROT["dev"] + CHEMPROT["test"]
        seconds = 3 * (CHEMPROT["train"] / train["samples_per_s"] + scored / evals["samples_per_s"])
        add("ChemProt 3 epochs, dev + test each epoch, s", "≤ 40", round(seconds, 1), seconds <= 40)
    for attention in ("torch", "no_cudnn"):
        hf = _find(rows, task="chemprot", shapes="hf-trainer", attention=attention,
                   group_by_length=False)  # fmt: skip
        if train and hf:
            ratio = train["samples_per_s"] / hf["samples_per_s"]
            add(f"× HF Trainer (its defaults, attention {attention})", "≥ 1.5", round(ratio, 2),
                ratio >= 1.5)  # fmt: skip
    bc5 = _find(rows, task="bc5chem", **base)
    if bc5:
        add("BC5-chem tagging, samples/s", "≥ 2,000", bc5["samples_per_s"],
            bc5["samples_per_s"] >= 2000)  # fmt: skip
    for shapes in ("padded", "padding_free"):
        modern = _find(rows, model="modernbert-base", precision="bf16", attention="no_cudnn",
                       shapes=shapes)  # fmt: skip
        if modern:
            add(f"ModernBERT-base ({shapes}), samples/s", "≥ 1,500", modern["samples_per_s"],
                modern["samples_per_s"] >= 1500)  # fmt: skip
    return out
