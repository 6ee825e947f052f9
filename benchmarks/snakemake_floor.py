"""Snakemake's own cost for a DAG of the workflow's shape (dag_scale.py `--scales`): a minimal
Snakefile with as many fine-tuning, tokenization and other jobs as the real dry run listed,
each with the real jobs' file shape (a fine-tuning job reads one tokenized folder and one model
marker and writes a manifest and a log; a tokenization job reads three splits and a marker), but
no params, constant resources, `shell:` instead of `script:` and no input functions of the
project's. What the real workflow takes above this is the project's; the floor itself is
Snakemake 9's per-job work, which grows with the jobs whatever the workflow does."""

from __future__ import annotations

import re
from pathlib import Path

FIXED_JOBS = 4  # the minimal Snakefile's own prepare (3 splits) and prefetch jobs
SNAKEFILE = """
FT, TOK, OTHER = config["finetune"], max(1, config["tokenize"]), config["other"]

rule all:
    input:
        expand("cells/c{i}/seeds.json", i=range(FT)),
        expand("other/o{k}.json", k=range(OTHER)),

rule other:
    output: "other/o{k}.json"
    shell: "touch {output}"

rule prepare:
    output: "data/{split}.parquet"
    shell: "touch {output}"

rule prefetch:
    output: "prefetched/model.json"
    shell: "touch {output}"

rule tokenize:
    input: expand("data/{split}.parquet", split=("train", "dev", "test")), "prefetched/model.json"
    output: directory("tokenized/t{j}")
    log: "logs/tokenize/t{j}.log"
    shell: "mkdir -p {output}"

rule finetune:
    input: lambda w: f"tokenized/t{int(w.i) % TOK}", "prefetched/model.json"
    output: "cells/c{i}/seeds.json"
    log: "logs/cells/c{i}.log"
    resources: mem_mb=32000, runtime=200, cpus_per_task=8
    shell: "touch {output}"
"""


def job_counts(dry_run_output: str) -> dict[str, int]:
    """The fine-tuning, tokenization and remaining job counts of a dry run's job stats."""
    stats = dict(
        (rule, int(count))
        for rule, count in re.findall(r"^([\w-]+)\s+(\d+)$", dry_run_output, re.M)
        if rule != "total"
    )
    finetune, tokenize = stats.pop("finetune", 0), stats.pop("tokenize", 0)
    stats.pop("all", None)
    other = max(0, sum(stats.values()) - FIXED_JOBS)
    return {"finetune": finetune, "tokenize": tokenize, "other": other}


def floor_workflow(workdir: Path, counts: dict[str, int]) -> list[str]:
    """Write the minimal Snakefile into `workdir`; the `snakemake -n all` arguments that plan
    these counts (as many jobs as the real run's)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "Snakefile").write_text(SNAKEFILE)
    return ["-n", "all", "--cores", "1", "--config", *(f"{k}={n}" for k, n in counts.items())]
