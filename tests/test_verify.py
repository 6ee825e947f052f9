"""A cell's identity (model content, tokenized inputs, data checksums) and the one verifier of a
result.json, on real jobs of a tiny model: what a job keeps or retrains (and says why), what a
checkpoint resumes, what aggregation counts, and what the workflow's stat check re-queues."""

from __future__ import annotations

import copy
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

from blurbflow.config import cell_jobs, expand_cells
from blurbflow.config.identity import cell_identity, data_checksums, stale_manifests
from blurbflow.data.generate import generate_source
from blurbflow.data.prepare import prepare_task
from blurbflow.models.build import build_demo_model
from blurbflow.models.load import load_tokenizer
from blurbflow.options import InputOptions
from blurbflow.record.verify import rescore_test, verify_result
from blurbflow.results.aggregate import aggregate
from blurbflow.tasks import get_task
from blurbflow.train import checkpoint
from blurbflow.train.cell import train_cell
from blurbflow.train.encode import encode_task
from blurbflow.train.job import run_cell_job

MODEL = "resources/models/tiny"
JOB = "results/cells/tiny/gad/standard/lr0.001-bs16"
CONFIG = {
    "models": {"tiny": {"path": MODEL, "size": "tiny"}},
    "defaults": {"batch_size": 16, "eval_batch_size": 64},
    "tasks": {"gad": {"max_length": 64}},
    "recipes": {"standard": {"lr": 1e-3, "epochs": 1}},
    "studies": {
        "s": {
            "models": ["tiny"],
            "tasks": ["gad"],
            "recipes": ["standard"],
            "seeds": 2,
            "baseline": "standard",
            "table": {"rows": "task", "columns": ["model"]},
        }
    },
}


def _build_model(root: Path, hidden_size: int) -> None:
    build_demo_model(
        [root / "resources/data/gad/train.parquet"],
        root / MODEL,
        hidden_size=hidden_size,
        pretrain_epochs=0,
        vocab_size=500,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project folder (relative paths, as the workflow has them) with gad cut to 120/40/40."""
    root = tmp_path_factory.mktemp("project")
    generate_source("gad", root / "raw/gad")
    stats = prepare_task("gad", root / "raw", root / "full")
    data = root / "resources/data/gad"
    data.mkdir(parents=True)
    for split, n in (("train", 120), ("dev", 40), ("test", 40)):
        pd.read_parquet(root / f"full/{split}.parquet").head(n).to_parquet(
            data / f"{split}.parquet"
        )
    _build_model(root, 32)
    encode_task(
        get_task("gad"),
        data,
        load_tokenizer(str(root / MODEL)),
        InputOptions(max_length=64),
        root / "resources/tokenized/tiny/gad/L64",
    )
    return {"root": root, "stats": stats}


def job_args(root: Path, config: dict = CONFIG):
    job = cell_jobs(expand_cells(config))[JOB]
    return (
        job.options,
        list(job.seeds),
        root / "resources/tokenized/tiny/gad/L64",
        root / "resources/data/gad",
        root / JOB / "seeds.json",
    )


def run_job(root: Path, monkeypatch, capsys, config: dict = CONFIG) -> str:
    monkeypatch.chdir(root)  # the workflow runs jobs in the project folder: relative paths
    options, seeds, encoded, data, manifest = job_args(Path("."), config)
    run_cell_job(options, seeds, encoded, data, manifest)
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def finished(project, tmp_path_factory):
    """The job run once; tests copy this folder before changing anything."""
    root = project["root"]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        options, seeds, encoded, data, manifest = job_args(Path("."))
        run_cell_job(options, seeds, encoded, data, manifest)
    return root


@pytest.fixture
def clone(finished, tmp_path):
    shutil.copytree(finished, tmp_path / "p", symlinks=True)
    return tmp_path / "p"


def test_identity_is_content_not_paths(project, finished, tmp_path, monkeypatch):
    root = project["root"]
    assert project["stats"]["checksums"] == data_checksums(root / "full")  # in stats.json too
    monkeypatch.chdir(root)
    options, _, encoded, data, _ = job_args(Path("."))
    identity = cell_identity(options, encoded, data)
    assert set(identity["data"]) == {"train", "dev", "test"} and identity["model"]["sha256"]
    assert str(root) not in json.dumps(identity) and str(tmp_path) not in json.dumps(identity)
    manifest = json.loads((root / JOB / "seeds.json").read_text())
    assert manifest["identity"] == identity and set(manifest["files"]) == {"1", "2"}
    result = json.loads((root / JOB / "seed1/result.json").read_text())
    assert result["identity"] == identity and len(result["predictions_sha256"]) == 64
    # a copy of the project elsewhere has the same identity
    shutil.copytree(root / "resources", tmp_path / "moved/resources")
    moved = tmp_path / "moved"
    assert (
        cell_identity(
            options.replace(model_source=str(moved / MODEL)), moved / encoded, moved / data
        )
        == identity
    )


def test_the_job_keeps_verified_seeds_and_a_moved_project_retrains_nothing(
    clone, monkeypatch, capsys
):
    before = (clone / JOB / "seed1/result.json").read_bytes()
    out = run_job(clone, monkeypatch, capsys)
    assert out.count(": kept (ok") == 2 and "training" not in out
    assert (clone / JOB / "seed1/result.json").read_bytes() == before
    assert stale_manifests([str(clone / JOB / "seeds.json")]) == []


def test_another_model_retrains_every_seed_and_says_why(clone, monkeypatch, capsys):
    old = json.loads((clone / JOB / "seeds.json").read_text())["identity"]
    shutil.rmtree(clone / MODEL)
    _build_model(clone, 48)  # same name, same path, same options: other weights
    out = run_job(clone, monkeypatch, capsys)
    assert out.count("training (its identity differs in model content") == 2, out
    new = json.loads((clone / JOB / "seed1/result.json").read_text())["identity"]
    assert new["model"] != old["model"] and new["data"] == old["data"]


def test_missing_input_folders_are_an_error(clone, monkeypatch):
    monkeypatch.chdir(clone)
    options, seeds, _, data, manifest = job_args(Path("."))
    with pytest.raises(FileNotFoundError, match="nonexistent: no tokenized inputs"):
        run_cell_job(options, seeds, Path("/nonexistent"), data, manifest)
    with pytest.raises(FileNotFoundError, match="nonexistent: no prepared data.*snakemake data"):
        run_cell_job(options, seeds, job_args(Path("."))[2], Path("/nonexistent"), manifest)


def test_a_checkpoint_of_another_model_is_discarded(clone, monkeypatch, capsys):
    monkeypatch.chdir(clone)
    options, _, encoded, data, _ = job_args(Path("."))
    identity = cell_identity(options, encoded, data)
    other = {**identity, "model": {"commit": None, "sha256": "0" * 64}}
    cell = Path(JOB, "seed1")
    key = json.dumps(
        {"options": options.with_seed(1).to_dict(), "identity": other},
        sort_keys=True,
        separators=(",", ":"),
    )
    torch.save({"options": key}, cell / checkpoint.CHECKPOINT)
    result = train_cell(options.with_seed(1), encoded, data, cell / "result.json")
    assert "discarded, written for other model content" in capsys.readouterr().out
    assert result["status"] == "ok" and not (cell / checkpoint.CHECKPOINT).exists()


def _plant(path: Path, **changes) -> dict:
    result = json.loads(path.read_text())
    result.update(changes)
    path.write_text(json.dumps(result))
    return result


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("copied", "holds cell tiny/gad/standard/lr0.001-bs16/2, not the cell of its folder"),
        ("stale", "options differ from the config's: epochs 3 → 1, lr 0.5 → 0.001"),
        ("huge", "test 1000000000.0 is outside the positive_f1 range 0 … 100"),
        ("nan", "test is nan, not a finite score"),
        ("edited", "but its predictions score"),
        ("deleted", "predictions.parquet is missing"),
        ("replaced", "predictions.parquet is not the file the job wrote"),
    ],
)
def test_aggregation_rejects_each_fault_and_the_workflow_requeues_its_job(clone, fault, reason):
    seed1 = clone / JOB / "seed1"
    if fault == "copied":
        shutil.copy2(clone / JOB / "seed2/result.json", seed1 / "result.json")
    elif fault == "stale":
        options = json.loads((seed1 / "result.json").read_text())["options"]
        _plant(seed1 / "result.json", options={**options, "lr": 0.5, "epochs": 3})
    elif fault == "huge":
        _plant(seed1 / "result.json", test=1e9)
    elif fault == "nan":
        _plant(seed1 / "result.json", test=math.nan)
    elif fault == "edited":
        result = json.loads((seed1 / "result.json").read_text())
        _plant(seed1 / "result.json", test=min(100.0, result["test"] + 7.5) - 0.25)
    elif fault == "deleted":
        (seed1 / "predictions.parquet").unlink()
    else:  # one prediction changed
        frame = pd.read_parquet(seed1 / "predictions.parquet")
        frame.loc[0, "pred"] = json.dumps("0" if json.loads(frame.loc[0, "pred"]) != "0" else "1")
        frame.to_parquet(seed1 / "predictions.parquet")
    manifest = clone / JOB / "seeds.json"
    assert stale_manifests([str(manifest)]) == [str(manifest)]  # the workflow re-queues it

    # a manifest forged to match (the stat check blind): aggregation itself still rejects it
    from blurbflow.config.identity import seed_records

    forged = json.loads(manifest.read_text())
    if fault != "deleted":
        forged["files"] = seed_records(clone / JOB, [1, 2])
    manifest.write_text(json.dumps(forged))
    frame = aggregate(CONFIG, root=clone, rescore=fault == "edited").set_index("seed")
    assert frame.loc[2, "status"] == "ok" and frame.loc[1, "status"] == "failed"
    assert frame.loc[1, "error"].startswith("rejected: ") and reason in frame.loc[1, "error"]
    assert not manifest.exists()  # the next run retrains that job


def test_the_verifier_accepts_a_finished_cell_and_rescoring_reproduces_its_test(finished):
    path = finished / JOB / "seed2/result.json"
    result = json.loads(path.read_text())
    cell_options = job_args(finished)[0].with_seed(2)
    assert verify_result(path, result, cell_options, result["identity"]) is None
    assert rescore_test(path.parent / "predictions.parquet", "gad") == pytest.approx(result["test"])
    assert "no identity recorded" in verify_result(
        path, {k: v for k, v in result.items() if k != "identity"}, cell_options, result["identity"]
    )
    config = copy.deepcopy(CONFIG)
    config["recipes"]["standard"]["epochs"] = 2
    frame = aggregate(config, root=finished, drop=False)
    assert set(frame["status"]) == {"failed"}
    assert frame["error"].str.contains("epochs 1 → 2").all()


def test_without_a_manifest_aggregation_rescores_and_keeps_the_manifestless_job(clone):
    """The partial report of a failed run: no manifest vouches for the files, so they are
    re-scored; an edited test is caught, the untouched seed counts."""
    (clone / JOB / "seeds.json").unlink()
    _plant(clone / JOB / "seed1/result.json", test=12.5)
    frame = aggregate(CONFIG, root=clone).set_index("seed")
    assert frame.loc[1, "error"].startswith("rejected: test 12.5 but its predictions score")
    assert frame.loc[2, "status"] == "ok"
