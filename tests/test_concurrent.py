"""Several seeds of a job at once, each in its own process (engine.cells_per_gpu,
blurbflow.train.concurrent), on a real job of a tiny model: each seed gives its solo run's
predictions to the bit; a failing seed beside a good one; SIGTERM reaches every seed's process
and the retry resumes them. The CPU's `auto` is one at a time; a number forces K here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from blurbflow import gpu_share
from blurbflow.config import cell_jobs, expand_cells
from blurbflow.data.generate import generate_source
from blurbflow.data.prepare import prepare_task
from blurbflow.models.build import build_demo_model
from blurbflow.models.load import load_tokenizer
from blurbflow.options import InputOptions
from blurbflow.tasks import get_task
from blurbflow.train import CellsFailed, Preempted, engine
from blurbflow.train.concurrent import cells_for_job, sharing
from blurbflow.train.device import select_device
from blurbflow.train.encode import encode_task
from blurbflow.train.job import run_cell_job
from blurbflow.util.digests import file_sha256

MODEL = "resources/models/tiny"
JOB = "results/cells/tiny/gad/standard/lr0.001-bs16"
CONFIG = {
    "models": {"tiny": {"path": MODEL, "size": "tiny"}},
    "defaults": {"batch_size": 16, "eval_batch_size": 64},
    "tasks": {"gad": {"max_length": 64}},
    "recipes": {"standard": {"lr": 1e-3, "epochs": 2}},  # a SIGTERM fault fires in epoch 2
    "studies": {
        "s": {
            "models": ["tiny"],
            "tasks": ["gad"],
            "recipes": ["standard"],
            "seeds": 2,
            "table": {"rows": "task", "columns": ["model"]},
        }
    },
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project folder (relative paths, as the workflow has them) with gad cut to 120/40/40."""
    root = tmp_path_factory.mktemp("project")
    generate_source("gad", root / "raw/gad")
    prepare_task("gad", root / "raw", root / "full")
    data = root / "resources/data/gad"
    data.mkdir(parents=True)
    for split, n in (("train", 120), ("dev", 40), ("test", 40)):
        pd.read_parquet(root / f"full/{split}.parquet").head(n).to_parquet(
            data / f"{split}.parquet"
        )
    build_demo_model(
        [data / "train.parquet"], root / MODEL, hidden_size=32, pretrain_epochs=0, vocab_size=500
    )
    encode_task(
        get_task("gad"),
        data,
        load_tokenizer(str(root / MODEL)),
        InputOptions(max_length=64),
        root / "resources/tokenized/tiny/gad/L64",
    )
    return root


def run_job(root: Path, monkeypatch, cells_per_gpu="auto", seeds: int = 2) -> dict[int, str]:
    monkeypatch.chdir(root)  # the workflow runs jobs in the project folder: relative paths
    config = json.loads(json.dumps(CONFIG))
    config["studies"]["s"]["seeds"] = seeds
    job = cell_jobs(expand_cells(config))[JOB]
    engine.use({"cells_per_gpu": cells_per_gpu})
    try:
        return run_cell_job(
            job.options,
            list(job.seeds),
            Path("resources/tokenized/tiny/gad/L64"),
            Path("resources/data/gad"),
            Path(JOB, "seeds.json"),
        )
    finally:
        engine.use(None)


def predictions(root: Path) -> dict[int, str]:
    return {s: file_sha256(root / JOB / f"seed{s}/predictions.parquet") for s in (1, 2)}


def result(root: Path, seed: int) -> dict:
    return json.loads((root / JOB / f"seed{seed}/result.json").read_text())


@pytest.fixture(scope="module")
def solo(project, tmp_path_factory):
    """The job run as the CPU's `auto` runs it: its seeds one after another in this process."""
    root = tmp_path_factory.mktemp("solo") / "p"
    shutil.copytree(project, root, symlinks=True)
    with pytest.MonkeyPatch.context() as patch:
        assert run_job(root, patch) == {1: "ok", 2: "ok"}
    return root


def copy_of(project: Path, tmp_path: Path) -> Path:
    shutil.copytree(project, tmp_path / "p", symlinks=True)
    return tmp_path / "p"


def test_auto_is_one_at_a_time_on_the_cpu_and_a_number_is_capped_by_the_seeds(request, monkeypatch):
    options, device = cell_jobs(expand_cells(CONFIG))[JOB].options, select_device()
    auto = 1
    if device.type == "cuda":  # this file on a GPU: the tiny model's memory fits MAX_CELLS
        monkeypatch.chdir(request.getfixturevalue("project"))
        auto = gpu_share.MAX_CELLS
    assert [cells_for_job(options, n, device) for n in (1, 5)] == [1, auto]
    monkeypatch.setattr(engine, "_settings", engine.Settings(cells_per_gpu=3))
    assert [cells_for_job(options, n, device) for n in (1, 2, 5)] == [1, 2, 3]


def test_sharing_is_the_seeds_on_the_gpu_while_one_trained_averaged_over_its_run():
    spans = {1: [0.0, 10.0], 2: [0.0, 5.0], 3: [5.0, None]}
    assert sharing(1, spans, now=10.0) == pytest.approx(2.0)  # 2 beside it, then 3
    assert sharing(2, spans, now=10.0) == pytest.approx(2.0)
    assert sharing(3, {**spans, 1: [0.0, 6.0]}, now=10.0) == pytest.approx(1.2)  # 1 s of 5


@pytest.mark.slow  # trains in processes of their own (~10 s a run)
def test_seeds_at_once_give_their_solo_bits_and_failing_ones_fail_the_job_alone(
    project, solo, tmp_path, monkeypatch
):
    """Four seeds at once, the third raising and the fourth killed (SIGKILL) in epoch 2: the
    two others finish with the bits of their solo runs, the third records its failure, the job
    records the fourth's, and the job fails without a manifest."""
    root = copy_of(project, tmp_path)
    monkeypatch.setenv("BLURBFLOW_FAULT", "raise@*/seed3;sigkill@*/seed4")  # inherited
    with pytest.raises(CellsFailed, match=r"^2 of 4 seeds failed: seed 3: InjectedFault: "):
        run_job(root, monkeypatch, cells_per_gpu=4, seeds=4)
    assert predictions(root) == predictions(solo)
    for seed in (1, 2):
        alone, shared = result(solo, seed), result(root, seed)
        assert (alone["engine"]["cells_per_gpu"], alone["engine"]["cells_sharing"]) == (1, 1.0)
        assert shared["engine"]["cells_per_gpu"] == 4 and 1 < shared["engine"]["cells_sharing"] <= 4
        assert [e["dev"] for e in shared["epochs"]] == [e["dev"] for e in alone["epochs"]]
        log = (root / JOB / f"seed{seed}/train.log").read_text()
        assert f"seed {seed}: training" in log and f"seed {seed}: ok" in log
        assert f"seed {3 - seed}:" not in log  # each seed's log holds its own lines only
    failed = result(root, 3)
    assert failed["status"] == "failed" and failed["error"].startswith("InjectedFault: ")
    assert "InjectedFault" in (root / JOB / "seed3/traceback.txt").read_text()
    assert "seed 3: failed" in (root / JOB / "seed3/train.log").read_text()
    killed = result(root, 4)
    assert killed["status"] == "failed" and killed["error"].startswith(
        "ChildProcessError: the seed's process ended by SIGKILL before recording a result"
    )
    assert "SIGKILL" in (root / JOB / "seed4/traceback.txt").read_text()
    assert not (root / JOB / "seeds.json").exists()


@pytest.mark.slow
def test_sigterm_reaches_every_seed_and_the_retry_resumes_to_the_solo_bits(
    project, solo, tmp_path, monkeypatch
):
    """Seed 1 gets SIGTERM at epoch 2 (as a preempted job's processes do): it saves its
    checkpoint, the job passes SIGTERM on to seed 2 and raises Preempted; the retry keeps what
    finished, resumes what saved, and ends with the solo bits and the manifest."""
    root = copy_of(project, tmp_path)
    monkeypatch.setenv("BLURBFLOW_FAULT", "sigterm@*/seed1")
    with pytest.raises(Preempted, match="SIGTERM"):
        run_job(root, monkeypatch, cells_per_gpu=2)
    assert (root / JOB / "seed1/checkpoint.pt").exists()
    assert not (root / JOB / "seed1/result.json").exists()
    assert not (root / JOB / "seeds.json").exists()
    monkeypatch.delenv("BLURBFLOW_FAULT")
    assert run_job(root, monkeypatch, cells_per_gpu=2) == {1: "ok", 2: "ok"}
    assert predictions(root) == predictions(solo)
    assert not (root / JOB / "seed1/checkpoint.pt").exists()
    manifest = json.loads((root / JOB / "seeds.json").read_text())
    assert manifest["files"]["1"]["predictions.parquet"]["sha256"] == predictions(solo)[1]
    assert "SIGTERM at epoch 2" in (root / JOB / "seed1/train.log").read_text()
