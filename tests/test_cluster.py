"""Per-cell cluster resources: by model size and task, more time on each retry."""

import math
import re

import pytest
import yaml

from blurbflow import gpu_share
from blurbflow.cluster import (
    SHORT_GROUP,
    cell_resources,
    estimated_minutes,
    size_resources,
    submission_group,
)

from model_helpers import make_options
from workflow_helpers import copy_workflow, planned_jobs, snakemake

BASE = make_options(task="jnlpba", epochs=20, max_length=512)


def test_large_models_get_more_memory_and_time():
    base, large = cell_resources(BASE, "base"), cell_resources(BASE, "large")
    assert base["gpu"] == large["gpu"] == 1
    assert large["mem_mb"] > base["mem_mb"] and large["runtime"] > base["runtime"]


def test_runtime_scales_with_attempt_and_has_a_floor():
    first, second = cell_resources(BASE, "base", 1), cell_resources(BASE, "base", 2)
    assert second["runtime"] == 2 * first["runtime"]
    small_task = make_options(task="biosses", epochs=30, max_length=512)
    assert cell_resources(small_task, "base")["runtime"] == 15


def test_subsample_shortens_and_overrides_apply():
    subsampled = cell_resources(BASE.replace(task="chemprot", train_subsample=100), "base")
    assert subsampled["runtime"] < cell_resources(BASE.replace(task="chemprot"), "base")["runtime"]
    custom = cell_resources(BASE, "base", overrides={"base": [16, 48000, 0.6]})
    assert custom["cpus_per_task"] == 16 and custom["mem_mb"] == 48000


def test_cpus_and_memory_follow_the_model_size_alone():
    # the workflow asks them as one constant where every job's model has the same size
    overrides = {"base": [16, 48000, 0.6]}
    for options in (BASE, BASE.replace(task="biosses", epochs=3)):
        for attempt, seeds in ((1, 1), (3, 5)):
            found = cell_resources(options, "base", attempt, overrides, seeds=seeds)
            assert size_resources("base", overrides) == {
                "cpus_per_task": found["cpus_per_task"],
                "mem_mb": found["mem_mb"],
            }
    assert size_resources("large") == {"cpus_per_task": 8, "mem_mb": 64000}


# BERT-base's config.json fields that size its memory
BERT_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "vocab_size": 30522}
BERT_BASE |= {"intermediate_size": 3072, "num_attention_heads": 12, "max_position_embeddings": 512}


def test_seeds_at_once_by_gpu_memory_at_most_four_never_more_than_the_seeds():
    shape = gpu_share.shape_of(BERT_BASE)
    assert shape == gpu_share.Shape(108_768_768, 768 * 12)
    chemprot = gpu_share.cell_gpu_bytes(shape, {"batch_size": 32, "max_length": 128})
    # 16 bytes a parameter + 34 a token × width + 1.5 GiB: 4.65 GB (3.0 GB measured besides
    # the CUDA context, benchmarks/results/gpu-suite-h200-2026-11-28.json)
    assert chemprot == 16 * 108_768_768 + 32 * 128 * 34 * 9216 + 1.5 * 2**30
    long = gpu_share.cell_gpu_bytes(shape, {"batch_size": 32, "max_length": 512})
    rtx3090, h200 = gpu_share.gpu_bytes("rtx3090"), gpu_share.gpu_bytes("h200")
    assert [gpu_share.cells_at_once("auto", 4, rtx3090, b) for b in (chemprot, long)] == [4, 2]
    assert gpu_share.cells_at_once("auto", 5, rtx3090, chemprot) == 3  # 3 and 2, not 4 and 1
    assert gpu_share.cells_at_once("auto", 3, h200, long) == 3  # the seeds left
    assert gpu_share.cells_at_once("auto", 5, None, chemprot) == 1  # no GPU
    assert gpu_share.cells_at_once(6, 5, None, None) == 5  # a number: as given, ≤ the seeds
    lora = {"batch_size": 32, "max_length": 128, "lora": {"r": 8}, "frozen_dtype": "bf16"}
    assert gpu_share.cell_gpu_bytes(shape, lora) == chemprot - 14 * 108_768_768  # 2 bytes each
    assert [gpu_share.gain(k) for k in (1, 1.5, 2, 4)] == [1.0, 1.25, 1.5, 1.5]
    # 5 seeds 4 at a time: a round of 4 at the gain, then one alone
    assert gpu_share.seed_equivalents(5, 4) == pytest.approx(4 / 1.5 + 1)
    assert gpu_share.seed_equivalents(5, 4, gpu_share.TIME_LIMIT_GAIN) == 5


def test_seeds_at_once_ask_a_process_each_and_the_time_limit_of_one_after_another():
    options = make_options(task="chemprot", epochs=5, max_length=128)
    tiny_alone, tiny_four = (size_resources("tiny", cells=k) for k in (1, 4))
    assert tiny_alone == {"cpus_per_task": 1, "mem_mb": 4000}
    per_process = gpu_share.PROCESS_HOST_MB + 8 * 4_400_000 / 1e6  # torch + CUDA, the model
    assert tiny_four == {"cpus_per_task": 8, "mem_mb": math.ceil(4 * per_process)}
    assert size_resources("base", cells=4) == size_resources("base")  # the row has room
    one, four = (cell_resources(options, "base", seeds=5, cells=k) for k in (1, 4))
    assert four["runtime"] == one["runtime"]  # the time limit counts no gain
    alone, shared = (estimated_minutes(options, "base", seeds=5, cells=k) for k in (1, 4))
    per_seed = (alone - 5) / 5  # minutes a seed alone, past the job's 5 of start-up
    assert shared == pytest.approx(5 + per_seed * (4 / 1.5 + 1))


def test_the_priority_is_the_estimate_below_the_floor_so_short_jobs_keep_their_order():
    # both under the 15-minute floor: equal limits, but the longer one still starts first
    hoc = make_options(task="hoc", epochs=12, max_length=512)
    biosses = make_options(task="biosses", epochs=20, max_length=512)
    limits = [cell_resources(o, "tiny", seeds=2)["runtime"] for o in (hoc, biosses)]
    assert limits == [15, 15]
    assert estimated_minutes(hoc, "tiny", seeds=2) > estimated_minutes(biosses, "tiny", seeds=2)
    assert cell_resources(BASE, "base")["runtime"] == math.ceil(estimated_minutes(BASE, "base"))


def test_unknown_size_is_named():
    with pytest.raises(KeyError, match="model size 'huge'"):
        cell_resources(BASE, "huge")


def test_short_jobs_after_a_selection_or_another_cells_weights_submit_alone():
    search = make_options(task="euadr-fold1", model="m", recipe="r")  # 284 training instances
    assert submission_group(search) == SHORT_GROUP
    final = search.replace(task="euadr-fold2", hparams_from=("r",), selection_file="s.json")
    assert submission_group(final) is None
    chosen = search.replace(hparams_models=("bert",), selection_file="reference.json")
    assert submission_group(chosen) is None  # after its reference models' choice
    started = make_options(
        task="euadr-fold1", init_from={"task": "squad2", "recipe": "q", "hparams": "h"}
    )
    assert submission_group(started) is None
    assert submission_group(search.replace(task="chemprot")) is None  # not short


@pytest.mark.slow  # runs snakemake
def test_slurm_profile_plans_a_short_cross_validation_study(tmp_path):
    """Search on the tune fold → selection → the other folds, all short: one group for all
    three would wait on itself ("Group short-cells depends on itself")."""
    workdir = copy_workflow(tmp_path)
    config = yaml.safe_load((workdir / "config/demo.yaml").read_text())
    config["studies"] = {
        "cv": {
            "models": list(config["models"])[:1],
            "tasks": ["euadr"],
            "recipes": ["standard"],
            "seeds": 1,
            "cross_validation": {"tasks": ["euadr"], "tune_fold": 1},
            "table": {"rows": "task", "columns": ["model"]},
        }
    }
    config["resources"] = {"tiny": [3, 5000, 0.05]}  # the one size: asked as a constant
    (workdir / "cv.yaml").write_text(yaml.safe_dump(config))
    run = snakemake(workdir, "all", "-n", "--profile", "slurm", "--configfile", "cv.yaml")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert len(planned_jobs(run.stdout)["finetune"]) == 10
    asked = re.findall(r"rule finetune:[^\[]*?resources: ([^\n]*)", run.stdout)
    assert len(asked) == 10
    assert all({"cpus_per_task=3", "mem_mb=5000"} <= set(line.split(", ")) for line in asked)
