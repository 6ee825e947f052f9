"""How long a SLURM fine-tuning job's own Snakemake takes before its script starts, on the real
workflow and config.yaml: seconds from that process's start to the first line of the rule's
script (workflow/scripts/finetune.py replaced by a stand-in whose first line records the time).

The process is the one SLURM's job step starts (`srun … snakemake --target-jobs … --mode
remote`, the arguments the executor plugins pass; the job step's own Snakemake before it costs
the same up to its DAG), in a copy of the workflow where the job's inputs exist (an empty
tokenized folder; a prefetch marker whose snapshot holds the model's config.json) and where the
main process has planned once, as it does before submitting (its job cache, blurbflow.job_cache).

    .venv/bin/python benchmarks/job_start.py [--repeat 3] [--job finetune:model=…,task=…,…]

`--smoke`: one repeat, the demo config.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from blurbflow.config import cell_jobs, expand_cells, input_key  # noqa: E402
from blurbflow.models.prefetch import marker_path, snapshot_folder  # noqa: E402
from blurbflow.util import paths  # noqa: E402

from workflow_helpers import copy_workflow  # noqa: E402

JOB = "model=pubmedbert,task=hoc,recipe=tinn-llrd,hparams=lr3e-05-bs32-llrd0.9"
SMOKE_JOB = "model=tiny-biobert,task=biosses,recipe=standard,hparams=lr0.001-bs16"
# the first line records the time; then the job's output, as a finished job leaves it
STAND_IN = """import os, time; open(os.environ["JOB_START_MARK"], "w").write(repr(time.time()))
open(snakemake.output[0], "w").write("{}")
"""
# what the executor plugins pass a job's Snakemake besides its target (snakemake-interface-
# executor-plugins' general arguments, the job step's `--mode remote`)
JOB_ARGS = (
    "--cores all --attempt 1 --force-use-threads --force --target-files-omit-workdir-adjustment "
    "--max-inventory-time 0 --retries 0 --nocolor --no-hooks --nolock --ignore-incomplete "
    "--rerun-triggers mtime params input software-env --latency-wait 60 --mode remote"
).split()
# a BERT-base config.json: the job's resources count the model's parameters from it
BERT_BASE = {
    "model_type": "bert",
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
}


def job_inputs(workdir: Path, config: dict, wildcards: dict) -> None:
    """The job's inputs: its tokenized folder, and a model's marker and snapshot (hub models) or
    folder (local models)."""
    job = cell_jobs(expand_cells(config))[paths.job_folder(**wildcards)]
    (workdir / paths.tokenized(job.model, job.task, input_key(job.task, job.options.inputs))).mkdir(
        parents=True
    )
    spec = config["models"][job.model]
    if spec.get("path"):
        (workdir / spec["path"]).mkdir(parents=True, exist_ok=True)
        (workdir / spec["path"] / "config.json").write_text(json.dumps(BERT_BASE))
        return
    cache = workdir / config.get("hf_cache", "resources/hf-cache")
    commit = "0" * 40
    snapshot = snapshot_folder(cache, spec["hub_id"], commit)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(BERT_BASE))
    marker = marker_path(cache, spec["hub_id"], spec.get("revision"))
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(
        json.dumps({"hub_id": spec["hub_id"], "commit": commit, "files": ["config.json"]})
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--job", help="the finetune job's wildcards, KEY=VALUE,…")
    parser.add_argument("--smoke", action="store_true", help="the demo config, one repeat")
    args = parser.parse_args()
    if args.smoke:
        args.repeat = 1
    config_file = REPO / ("config/demo.yaml" if args.smoke else "config.yaml")
    config = yaml.safe_load(config_file.read_text())
    job = args.job or (SMOKE_JOB if args.smoke else JOB)
    wildcards = dict(item.split("=", 1) for item in job.split(","))
    snakemake = str(Path(sys.executable).parent / "snakemake")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = copy_workflow(Path(tmp) / "wf")
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
        job_inputs(workdir, config, wildcards)
        (workdir / "workflow/scripts/finetune.py").write_text(STAND_IN)
        target = f"finetune:{job}"
        # the main process's planning: it leaves its job cache
        planned = subprocess.run(
            [snakemake, "-n", "--target-jobs", target, "--allowed-rules", "finetune"],
            cwd=workdir,
            capture_output=True,
            text=True,
        )
        if planned.returncode != 0:
            raise SystemExit(planned.stderr[-3000:])
        mark = Path(tmp) / "mark"
        env = {**os.environ, "JOB_START_MARK": str(mark)}
        command = [snakemake, "--target-jobs", target, "--allowed-rules", "finetune", *JOB_ARGS]
        seconds = []
        for _ in range(args.repeat):
            mark.unlink(missing_ok=True)
            start = time.time()
            run = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)
            if run.returncode != 0 or not mark.exists():
                raise SystemExit(run.stderr[-3000:])
            seconds.append(float(mark.read_text()) - start)
    print(
        f"{config_file.name}, job {job}: process start to the script's first line, median of "
        f"{len(seconds)}: {statistics.median(seconds):.2f} s "
        f"({', '.join(f'{s:.2f}' for s in seconds)})"
    )


if __name__ == "__main__":
    main()
