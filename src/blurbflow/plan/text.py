"""The plan as the plain text `snakemake plan` prints."""

from __future__ import annotations

from blurbflow.cluster import JOB_OVERHEAD_MINUTES
from blurbflow.plan.calibrate import MIN_CELLS, TABLE_DEVICE
from blurbflow.plan.params import FLOPS_SOURCE


def hours_label(device: str) -> str:
    if device == TABLE_DEVICE:
        return "GPU-hours (prior)"
    if device == "cpu":
        return "CPU-hours (calibrated on cpu)"
    return f"GPU-hours on {device} (calibrated)"


def hours(value: float) -> str:
    """Device-hours as printed: two decimals below 10 (a demo's minutes), else one."""
    return f"{value:,.2f}" if value < 10 else f"{value:,.1f}"


def _hours(by_device: dict[str, float]) -> str:
    if not by_device:
        return "0 device-hours"
    return " + ".join(f"{hours(h)} {hours_label(d)}" for d, h in sorted(by_device.items()))


def _rates(calibration: dict, prior: str = FLOPS_SOURCE) -> list[str]:
    if not calibration["cells"]:
        return [
            "Rates: no finished cell yet, every figure is the prior: each model's parameter count"
            " N (its `params`, config.json, else its size class) × 6 FLOPs a trained token (4"
            " under LoRA, +2 with gradient checkpointing), 2 an evaluated one, at"
            f" {prior}; tokens from the tokenized caches, the prepared data or the task's"
            " measured length (blurbflow.plan.lengths); a size class in the config's `resources`"
            " takes that table's rate."
        ]
    lines = [f"Rates calibrated from {calibration['cells']:,} finished cells (ok result.json):"]
    for fit in calibration["fits"]:
        chosen = " (the plan's device for this size)" if fit["chosen"] else ""
        lines.append(
            f"  {fit['size']} on {fit['device']}: {fit['a']:.1f} s per seed + {fit['b']:.2f} s"
            f" per unit of work (256,000 trained tokens, an evaluated one a third),"
            f" from {fit['cells']:,} cells{chosen}"
        )
    tasks = sorted(
        (f for f in calibration["factors"] if f["model"] is None), key=lambda f: f["task"]
    )
    pairs = sum(1 for f in calibration["factors"] if f["model"] is not None)
    if tasks:
        shown = ", ".join(f"{f['task']} ×{f['factor']:.2f} ({f['cells']})" for f in tasks[:8])
        more = f" and {len(tasks) - 8} more" if len(tasks) > 8 else ""
        lines.append(
            f"  task factors on the work term (tasks with ≥ {MIN_CELLS} finished cells):"
            f" {shown}{more}; {pairs} model-task pairs have their own"
        )
    return lines


def format_plan(plan: dict) -> str:
    left = plan["remaining"]
    queue = left["queue"]
    lines = [
        f"Plan: {plan['cells']:,} cells in {plan['jobs']:,} fine-tuning jobs;"
        f" still to run: {left['cells']:,} cells in {left['jobs']:,} jobs.",
        *_rates(plan["calibration"], plan.get("prior", FLOPS_SOURCE)),
        "",
        f"{'study':<24} {'cells left':>10} {'jobs left':>9} {'device-h':>10}  of cells / jobs",
    ]
    for name, s in plan["studies"].items():
        shared = f"  ({s['shared_jobs']:,} jobs shared)" if s["shared_jobs"] else ""
        lines.append(
            f"{name:<24} {s['cells']:>10,} {s['jobs']:>9,} {hours(s['hours']):>10}"
            f"  {s['total_cells']:,} / {s['total_jobs']:,}{shared}"
        )
    if any(s["shared_jobs"] for s in plan["studies"].values()):
        lines.append(
            "Jobs shared by several studies are in each of their lines; the total counts them once."
        )
    lines += [
        "",
        f"{'model':<22} {'size':<6} {'cells':>7} {'jobs':>6} {'device-h':>10}  rate",
    ]
    scaled = False
    for name, m in plan["models"].items():
        if m["rate_cells"]:
            rate = f"{m['device']}, fit of {m['rate_cells']:,} cells"
            if m["rate_source"] != "fit":
                rate = f"{m['device']}, {m['rate_source']} ({m['rate_cells']:,} cells)"
            if m["factored_jobs"]:
                rate += f"; task factor for {m['factored_jobs']:,} of {m['jobs']:,} jobs"
        else:
            rate = TABLE_DEVICE
        if m["rate_source"].startswith("scaled"):
            scaled = True
        size = m["size"] if m["params_source"].startswith("size") else f"{m['size']}*"
        lines.append(
            f"{name:<22} {size:<6} {m['cells']:>7,} {m['jobs']:>6,} {hours(m['hours']):>10}  {rate}"
        )
    if any(not m["params_source"].startswith("size") for m in plan["models"].values()):
        lines.append("* sized by its parameter count (the model entry's `params` or config.json)")
    if scaled:
        lines.append(
            "A size without finished cells takes the best-calibrated size's fit × the ratio of"
            " the two sizes' priors."
        )
    checking = (
        f" ({left['checking_jobs']:,} of them train no seed: they re-run to re-check the seeds"
        " they keep)"
        if left["checking_jobs"]
        else ""
    )
    lines += [
        "",
        f"Total still to run: {left['cells']:,} cells in {left['jobs']:,} jobs{checking},"
        f" {_hours(left['hours_by_device'])}",
        f"  plus each job's start-up (imports, model load; not timed by result.json):"
        f" {left['jobs']:,} × {JOB_OVERHEAD_MINUTES} min = {hours(left['startup_hours'])} h"
        " at most (table allowance)",
        f"Queue: {queue['entries']:,} SLURM submissions of fine-tuning jobs: "
        + ", ".join(
            [
                f"{queue['grouped'][g]:,} {g} jobs, {queue['components'][g]} to a submission,"
                f" in {queue['submissions'][g]:,}"
                for g in sorted(queue["grouped"])
            ]
            + [f"{queue['alone']:,} alone"]
        )
        + ("" if queue["profile_found"] else f" (no {queue['profile']}: every job alone)"),
        *_cells_per_gpu(plan),
        *_stage_versions(plan["stage_versions"]),
    ]
    return "\n".join(lines)


def hours_by_device(plan: dict) -> dict[str, float]:
    return plan["remaining"].get("hours_by_device") or {}


def _cells_per_gpu(plan: dict) -> list[str]:
    """How many seeds the jobs still to run train at once on their GPU (blurbflow.gpu_share)."""
    counts = plan["remaining"].get("cells_per_gpu") or {}
    if not counts:
        return []
    jobs = ", ".join(f"{n:,} job{'s' * (n > 1)} {k} at a time" for k, n in counts.items())
    shared = (
        f"; seeds sharing a GPU count a {plan['gain']:g}x aggregate gain (a prior until the GPU"
        " suite measures it: blurbflow.gpu_share.GAIN), SLURM time limits none"
        if any(k > 1 for k in counts)
        else ""
    )
    if not shared and plan["cells_per_gpu"] == "auto" and "cpu" not in hours_by_device(plan):
        shared = (
            "; a GPU type the plan knows (engine.gpu, slurm.gpu_model) prices more by its memory"
        )
    return [f"Seeds per GPU (engine.cells_per_gpu: {plan['cells_per_gpu']}): {jobs}{shared}"]


def _stage_versions(bump: dict) -> list[str]:
    """What a stage-version bump re-runs (blurbflow.plan.stages), and its most GPU-hours."""
    if not bump["folders"]:
        return []
    shown = [f"  {folder}: {', '.join(changed)}" for folder, changed in bump["folders"].items()]
    more = len(shown) - 8
    return [
        "",
        f"Stage versions changed since {len(shown):,} folder{'s' * (len(shown) > 1)} were"
        " written (their stage re-runs):",
        *shown[:8],
        *([f"  … and {more:,} more"] if more > 0 else []),
        f"The {bump['jobs']:,} jobs after them run again: their {bump['cells']:,} cells re-train"
        f" only where the rebuilt files differ, at most {hours(bump['hours'])} device-hours"
        " (none where the bytes come out the same).",
    ]


def launch_line(summary: dict | str, configfile: str) -> str:
    """What a launch of the paper config is about to train (estimate.launch_summary, or why it
    could not be estimated), said on one line before its first job."""
    head = f"blurbflow: launching the paper config ({configfile}, no --configfile given):"
    if isinstance(summary, str):
        return f"{head} its cost could not be estimated ({summary}); see `snakemake plan`"
    return (
        f"{head} {summary['cells']:,} cells to train in {summary['jobs']:,} fine-tuning jobs,"
        f" {_hours(summary['hours_by_device'])}; `snakemake plan` itemises it"
    )
