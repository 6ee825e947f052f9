"""The README's statement of what the paper config (config.yaml) costs before launch: cells,
fine-tuning jobs, SLURM submissions and GPU-hours at the rate of the GPU the plan assumes, from
`snakemake plan`'s own code (blurbflow.plan) run on an empty project, so the figures cannot go
stale."""

from __future__ import annotations

import contextlib
import re
import tempfile
from pathlib import Path

import yaml

from blurbflow.docgen.options import COMMAND

PAPER_CONFIG = "config.yaml"
PROFILE = "slurm/profile.yaml"
MARKS = ("<!-- BEGIN paper config cost", "<!-- END paper config cost -->")


def paper_plan(root: Path) -> dict:
    """`snakemake plan` of the paper config in a fresh clone: nothing run, nothing prefetched
    (the plan reads results/ and the hub cache relative to the working folder)."""
    from blurbflow.plan.estimate import plan_config
    from blurbflow.tasks import register_tasks

    root = Path(root).resolve()
    config = yaml.safe_load((root / PAPER_CONFIG).read_text())
    register_tasks(config)
    with tempfile.TemporaryDirectory() as empty, contextlib.chdir(empty):
        return plan_config(config, ".", str(root / PROFILE))


def gpu_rate(name: str) -> str:
    """Whose rate the prior's GPU-hours are at: `the RTX 3090's measured rate`."""
    from blurbflow.plan import gpus

    shown = re.sub(r"^rtx", "RTX ", name).upper()
    how = "measured rate" if gpus.row(name).measured else "rate, scaled by peak from measured GPUs"
    return f"the {shown}'s {how}"


def cost_block(plan: dict) -> str:
    """The README's lines between the markers."""
    left = plan["remaining"]
    queue = left["queue"]
    grouped = sum(queue["grouped"].values())
    groups = sum(queue["submissions"].values())
    packed = "/".join(str(n) for n in queue["components"].values())
    hours = f"{round(left['hours'], -2):,.0f}"
    return (
        f"{MARKS[0]}: generated from `snakemake plan` by `{COMMAND}` -->\n"
        f"Before launch, `snakemake plan` prices the paper config at **{plan['cells']:,} cells** "
        f"in **{plan['jobs']:,} fine-tuning jobs**, **{queue['entries']:,} SLURM submissions** "
        f"({grouped:,} short jobs {packed} to a submission in {groups:,}, {queue['alone']:,} "
        f"alone) and about **{hours} GPU-hours** at {gpu_rate(plan['prior_gpu'])} (its prior, "
        f"before any cell calibrates it), plus up to {left['startup_hours']:,.0f} hours of job "
        "start-up.\n"
        f"{MARKS[1]}\n"
    )
