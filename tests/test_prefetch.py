"""Prefetch (DESIGN §10) against a fake Hugging Face hub served on 127.0.0.1: only config,
tokenizer and one set of weights are downloaded, a second prefetch downloads nothing, and with
the hub gone and HF_HUB_OFFLINE=1 the cache alone loads the model."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hub_helpers import FakeHub, hub_study, other_weights, output, run_snakemake, serve_hub

from blurbflow.models.download import prefetch_model
from blurbflow.models.load import load_for_task, load_tokenizer
from blurbflow.models.prefetch import (
    ModelNotCached,
    cached_model_dir,
    marker_path,
    model_folder,
    offline_env,
    select_files,
)
from blurbflow.options import ModelOptions
from blurbflow.tasks import get_task

from model_helpers import tiny_bert


def prefetch_to_marker(hub_id: str, cache_dir: Path, revision: str | None = None, **kw) -> dict:
    """Prefetch and write the marker `marker_path(cache_dir, hub_id, revision)`, as the
    prefetch rule's step does."""
    from blurbflow.models.download import write_marker

    summary = prefetch_model(hub_id, cache_dir, revision, **kw)
    return write_marker(summary, marker_path(cache_dir, hub_id, revision))


DECOYS = {
    "tf_model.h5": b"HDF5 decoy",
    "flax_model.msgpack": b"msgpack decoy",
    "onnx/model.onnx": b"onnx decoy",
    "training_args.bin": b"not weights",
    "README.md": b"# tiny",
}
TOKENIZER = {"tokenizer.json", "tokenizer_config.json"}


@pytest.fixture
def hub(monkeypatch):
    yield from serve_hub(monkeypatch)


# ---------------------------------------------------------------- a tiny model, built here
def folder_files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, dict[str, bytes]]:
    """The files of a tiny BERT, as safetensors and as a legacy pytorch_model.bin."""
    texts = ["aspirin reduces the risk of stroke", "the gene BRCA1 is linked to cancer"] * 20
    model, config, tokenizer = tiny_bert(texts, 120, layers=2)
    safe = tmp_path_factory.mktemp("tiny-safetensors")
    model.save_pretrained(safe)
    tokenizer.save_pretrained(safe)
    legacy = tmp_path_factory.mktemp("tiny-bin")
    config.save_pretrained(legacy)
    tokenizer.save_pretrained(legacy)
    torch.save(model.state_dict(), legacy / "pytorch_model.bin")
    return {"safetensors": folder_files(safe), "bin": folder_files(legacy)}


def word_embeddings(files: dict[str, bytes]) -> torch.Tensor:
    from safetensors.torch import load

    return load(files["model.safetensors"])["embeddings.word_embeddings.weight"]


def forward(folder: Path):
    tokenizer = load_tokenizer(str(folder))
    model = load_for_task(str(folder), get_task("gad")).eval()
    batch = tokenizer(["aspirin reduces stroke", "BRCA1 cancer"], padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    assert logits.shape == (2, 2) and torch.isfinite(logits).all()
    return model


# ---------------------------------------------------------------- tests
def test_prefetch_downloads_config_tokenizer_and_safetensors_only_once(hub, tiny, tmp_path):
    sha = hub.add_repo("bio/tiny", {**tiny["safetensors"], **DECOYS})
    cache = tmp_path / "hf-cache"

    summary = prefetch_model("bio/tiny", cache, endpoint=hub.url)

    expected = {"config.json", "model.safetensors", *TOKENIZER}
    snapshot = Path(summary["snapshot"])
    assert summary["commit"] == sha and snapshot.name == sha
    assert summary["hub_id"] == "bio/tiny" and summary["revision"] == "main"
    assert set(summary["files"]) == expected and summary["weights"] == "safetensors"
    assert {p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file()} == (
        expected
    )
    assert summary["bytes"] == sum(len(tiny["safetensors"][f]) for f in expected)
    assert (snapshot / "model.safetensors").read_bytes() == tiny["safetensors"]["model.safetensors"]
    names = {p.name for p in cache.rglob("*")}
    assert not names & {"tf_model.h5", "flax_model.msgpack", "model.onnx", "training_args.bin"}
    assert hub.downloads(r"\.(h5|msgpack|onnx)$|training_args|README") == []
    assert len(hub.downloads(r"model\.safetensors$")) >= 1

    before = len(hub.downloads())
    again = prefetch_model("bio/tiny", cache, endpoint=hub.url)
    assert again == summary
    assert len(hub.downloads()) == before  # nothing fetched again, not even a HEAD


def test_offline_cache_loads_the_model_with_the_hub_gone(hub, tiny, tmp_path, monkeypatch):
    from huggingface_hub import constants

    hub.add_repo("bio/tiny", {**tiny["safetensors"], **DECOYS})
    cache = tmp_path / "hf-cache"
    snapshot = Path(prefetch_model("bio/tiny", cache, endpoint=hub.url)["snapshot"])
    hub.stop()
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # what HF_HUB_OFFLINE=1 sets

    folder = cached_model_dir("tiny-bio", "bio/tiny", cache)

    assert folder == snapshot
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    assert model_folder(ModelOptions(model="tiny-bio", model_source="bio/tiny")) == snapshot
    local = tmp_path / "resources/models/tiny"
    local.mkdir(parents=True)
    assert model_folder(ModelOptions(model="demo", model_source=str(local))) == local
    model = forward(folder)
    assert torch.equal(
        model.bert.embeddings.word_embeddings.weight, word_embeddings(tiny["safetensors"])
    )


@pytest.mark.slow  # runs snakemake or trains for long; `make test-fast` leaves it out
def test_prefetch_then_offline_job_in_fresh_processes(hub, tiny, tmp_path):
    """The real switches: HF_ENDPOINT for the login node, offline_env() for the job."""
    hub.add_repo("bio/tiny", {**tiny["safetensors"], **DECOYS})
    cache = tmp_path / "hf-cache"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    base["HF_HOME"] = str(tmp_path / "hf-home")
    prefetch = (
        "import json, sys; from blurbflow.models.download import prefetch_model; "
        "print(json.dumps(prefetch_model('bio/tiny', sys.argv[1])))"
    )
    run = subprocess.run(
        [sys.executable, "-c", prefetch, str(cache)],
        env={**base, "HF_ENDPOINT": hub.url},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout)["files"] == sorted(
        {"config.json", "model.safetensors", *TOKENIZER}
    )
    hub.stop()

    job = (
        "import sys; from huggingface_hub import constants; assert constants.HF_HUB_OFFLINE; "
        "from blurbflow.models.prefetch import cached_model_dir; "
        "from blurbflow.models.load import load_tokenizer, load_for_task; "
        "from blurbflow.tasks import get_task; "
        "folder = cached_model_dir('tiny-bio', 'bio/tiny', constants.HF_HUB_CACHE); "
        "tok = load_tokenizer(str(folder)); model = load_for_task(str(folder), get_task('gad')); "
        "print(model(**tok(['aspirin'], return_tensors='pt')).logits.shape)"
    )
    run = subprocess.run(
        [sys.executable, "-c", job],
        env={**base, **offline_env(cache)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "torch.Size([1, 2])" in run.stdout


def test_model_not_in_cache_names_model_hub_id_cache_and_fix(hub, tiny, tmp_path):
    cache = tmp_path / "hf-cache"
    with pytest.raises(ModelNotCached) as error:
        cached_model_dir("pubmedbert", "microsoft/BiomedNLP-PubMedBERT-base", cache)
    message = str(error.value)
    for part in (
        "pubmedbert",
        "microsoft/BiomedNLP-PubMedBERT-base",
        str(cache),
        "snakemake prefetch",
    ):
        assert part in message
    assert isinstance(error.value, ValueError)


def test_partial_cache_is_not_taken_for_a_complete_one(hub, tiny, tmp_path):
    hub.add_repo("bio/tiny", {**tiny["safetensors"], **DECOYS})
    cache = tmp_path / "hf-cache"
    snapshot = Path(prefetch_model("bio/tiny", cache, endpoint=hub.url)["snapshot"])
    (snapshot / "model.safetensors").unlink()  # an interrupted download

    with pytest.raises(ModelNotCached) as error:
        cached_model_dir("tiny-bio", "bio/tiny", cache)
    assert "model.safetensors" in str(error.value) and "snakemake prefetch" in str(error.value)


def test_cache_without_tree_listing_is_judged_by_its_files(tmp_path, tiny):
    """A cache filled by another tool (no trees/ listing): complete only with weights."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    storage = tmp_path / "hf-cache" / "models--bio--copied"
    (storage / "refs").mkdir(parents=True)
    (storage / "refs" / "main").write_text(sha)
    snapshot = storage / "snapshots" / sha
    snapshot.mkdir(parents=True)
    for name in ("config.json", *TOKENIZER):
        (snapshot / name).write_bytes(tiny["safetensors"][name])

    with pytest.raises(ModelNotCached, match="no PyTorch weights") as error:
        cached_model_dir("copied", "bio/copied", tmp_path / "hf-cache")
    assert "snakemake prefetch" in str(error.value)

    (snapshot / "model.safetensors").write_bytes(tiny["safetensors"]["model.safetensors"])
    assert cached_model_dir("copied", "bio/copied", tmp_path / "hf-cache") == snapshot


def test_bin_only_repo_prefetches_the_bin_and_loads_it(hub, tiny, tmp_path, monkeypatch):
    from huggingface_hub import constants

    hub.add_repo("bio/tiny-electra-like", {**tiny["bin"], **DECOYS})
    cache = tmp_path / "hf-cache"

    summary = prefetch_model("bio/tiny-electra-like", cache, endpoint=hub.url)

    assert summary["weights"] == "bin"
    assert set(summary["files"]) == {"config.json", "pytorch_model.bin", *TOKENIZER}
    assert hub.downloads("training_args") == []
    hub.stop()
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    model = forward(cached_model_dir("tiny-bin", "bio/tiny-electra-like", cache))
    assert torch.equal(
        model.bert.embeddings.word_embeddings.weight, word_embeddings(tiny["safetensors"])
    )


def test_select_files_prefers_safetensors_and_keeps_shards():
    tokenizer = ["tokenizer.json", "vocab.txt", "spm.model"]
    both = ["config.json", *tokenizer, "model.safetensors", "pytorch_model.bin", "tf_model.h5"]
    assert select_files(both) == sorted(["config.json", *tokenizer, "model.safetensors"])
    shards = [f"model-0000{i}-of-00002.safetensors" for i in (1, 2)]
    sharded = ["config.json", "vocab.txt", "model.safetensors.index.json", *shards]
    sharded += ["pytorch_model-00001-of-00002.bin", "pytorch_model.bin.index.json"]
    assert select_files(sharded) == sorted(
        ["config.json", "vocab.txt", "model.safetensors.index.json", *shards]
    )
    with pytest.raises(ValueError, match="no PyTorch weights"):
        select_files(["config.json", "vocab.txt", "tf_model.h5", "flax_model.msgpack"])
    with pytest.raises(ValueError, match="no tokenizer vocabulary"):
        select_files(["config.json", "model.safetensors"])


def test_prefetch_of_a_repo_without_pytorch_weights_fails_before_downloading(hub, tmp_path):
    hub.add_repo("bio/tf-only", {"config.json": b"{}", "vocab.txt": b"[PAD]\n", **DECOYS})
    with pytest.raises(ValueError, match="no PyTorch weights"):
        prefetch_model("bio/tf-only", tmp_path / "hf-cache", endpoint=hub.url)
    assert hub.downloads() == []


# ---------------------------------------------------------------- revisions, deadline, repair
def test_a_pinned_revision_loads_its_own_snapshot_with_main_also_cached(
    hub, tiny, tmp_path, monkeypatch
):
    from huggingface_hub import constants

    from blurbflow.models.prefetch import model_commit

    pinned = hub.add_repo("bio/tiny", tiny["safetensors"], ref="v1.1")
    main = hub.add_repo("bio/tiny", other_weights(tiny["safetensors"]), ref="main")
    cache = tmp_path / "hf-cache"
    for revision in ("v1.1", None):
        prefetch_to_marker("bio/tiny", cache, revision, endpoint=hub.url)
    marker = json.loads(marker_path(cache, "bio/tiny", "v1.1").read_text())
    assert marker["commit"] == pinned and marker["revision"] == "v1.1"
    # the tag moves on the hub: it was resolved once, at prefetch
    hub.add_repo("bio/tiny", other_weights(other_weights(tiny["safetensors"])), ref="v1.1")
    hub.stop()
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))

    options = ModelOptions(model="tiny-bio", model_source="bio/tiny", revision="v1.1")
    folder = model_folder(options)
    assert folder.name == pinned and model_commit(options) == pinned
    model = forward(folder)
    assert torch.equal(
        model.bert.embeddings.word_embeddings.weight, word_embeddings(tiny["safetensors"])
    )
    unpinned = ModelOptions(model="tiny-bio", model_source="bio/tiny")
    assert model_folder(unpinned).name == main != pinned

    with pytest.raises(ModelNotCached, match="v2"):
        model_folder(dataclasses.replace(options, revision="v2"))  # never falls back to main


def test_a_download_past_its_deadline_is_stopped_and_leaves_nothing(hub, tiny, tmp_path):
    import time

    from blurbflow.models.download import PrefetchError

    hub.add_repo("bio/tiny", tiny["safetensors"])
    hub.trickle = {"model.safetensors"}  # a byte every 0.2 s: no read timeout ever fires
    cache = tmp_path / "hf-cache"
    started = time.monotonic()
    with pytest.raises(PrefetchError, match="did not finish within 3 s") as error:
        prefetch_model("bio/tiny", cache, endpoint=hub.url, deadline_s=3)
    assert time.monotonic() - started < 10
    assert "snakemake prefetch" in str(error.value)
    assert list(cache.rglob("*.incomplete")) == []
    assert not list(cache.rglob("model.safetensors"))


def test_interrupted_downloads_left_in_the_cache_are_removed(hub, tiny, tmp_path):
    import os
    import time

    hub.add_repo("bio/tiny", tiny["safetensors"])
    blobs = tmp_path / "hf-cache" / "models--bio--tiny" / "blobs"
    blobs.mkdir(parents=True)
    killed, live = blobs / "0a1b.1234abcd.incomplete", blobs / "0a1b.5678ef90.incomplete"
    killed.write_bytes(b"partial")
    live.write_bytes(b"partial")
    an_hour_ago = time.time() - 3600
    os.utime(killed, (an_hour_ago, an_hour_ago))

    prefetch_model("bio/tiny", tmp_path / "hf-cache", endpoint=hub.url)

    assert not killed.exists()
    assert live.exists()  # maybe another project's download, still running


def test_prefetch_check_repairs_a_snapshot_at_its_recorded_commit(hub, tiny, tmp_path):
    import os

    from blurbflow.models.download import repair_marker

    sha = hub.add_repo("bio/tiny", tiny["safetensors"])
    cache = tmp_path / "hf-cache"
    prefetch_to_marker("bio/tiny", cache, endpoint=hub.url)
    marker = marker_path(cache, "bio/tiny")
    snapshot = cache / "models--bio--tiny" / "snapshots" / sha
    assert repair_marker(marker).endswith(f"complete (commit {sha})")
    before = marker.stat().st_mtime_ns
    os.unlink((snapshot / "model.safetensors").resolve())
    (snapshot / "model.safetensors").unlink()
    hub.add_repo("bio/tiny", other_weights(tiny["safetensors"]))  # main moved meanwhile

    assert "repaired (model.safetensors missing" in repair_marker(marker, endpoint=hub.url)

    assert (snapshot / "model.safetensors").read_bytes() == tiny["safetensors"]["model.safetensors"]
    assert json.loads(marker.read_text())["commit"] == sha
    assert marker.stat().st_mtime_ns == before  # unchanged: nothing downstream re-runs


# ---------------------------------------------------------------- through real snakemake runs
# `snakemake prefetch` and `snakemake all` on a copy of the workflow whose one model is the fake
# hub's repo. The snakemake process gets HF_ENDPOINT (the fake hub); `prefetch` also gets
# HF_HUB_OFFLINE=1, as a cluster may export for everyone, so the prefetch rule must switch it
# off for itself, while `all` gets HF_HUB_OFFLINE=0, so its jobs must switch it on themselves.
# The study is that model × biosses (generated data, 64 pairs) × a 1-epoch recipe × 1 seed.
DECOY_NAMES = r"\.(h5|msgpack|onnx)$|training_args|README"


def hub_cell_result(workdir: Path, model: str = "tiny-hub") -> dict:
    path = workdir / f"results/cells/{model}/biosses/quick/lr0.001-bs16/seed1/result.json"
    return json.loads(path.read_text())


@pytest.mark.e2e
def test_snakemake_prefetch_then_all_trains_from_the_cache_offline(hub, tiny, tmp_path):
    sha = hub.add_repo("bio/tiny", {**tiny["safetensors"], **DECOYS})
    workdir, cache = hub_study(tmp_path)

    run = run_snakemake(workdir, "prefetch", hub.url, tmp_path)

    assert run.returncode == 0, output(run)[-5000:]
    marker = json.loads((cache / ".prefetched/bio--tiny@main.json").read_text())
    snapshot = cache / "models--bio--tiny" / "snapshots" / sha
    expected = {"config.json", "model.safetensors", *TOKENIZER}
    assert marker["hub_id"] == "bio/tiny"
    assert marker["commit"] == sha and marker["revision"] == "main"
    assert marker["snapshot"] == str(snapshot)
    assert set(marker["files"]) == expected and marker["weights"] == "safetensors"
    assert folder_files(snapshot) == {name: tiny["safetensors"][name] for name in expected}
    assert marker["bytes"] == sum(len(tiny["safetensors"][name]) for name in expected)
    assert hub.downloads(DECOY_NAMES) == []
    names = {p.name for p in cache.rglob("*")}
    assert not names & {"tf_model.h5", "flax_model.msgpack", "model.onnx", "training_args.bin"}
    assert not (workdir / "resources/tokenized").exists()  # prefetch trains nothing
    hub.stop()

    # Offline: the hub that served the files is gone; HF_ENDPOINT now names an empty hub that
    # logs every request (any request at all, e.g. a HEAD for the commit, is a failure).
    tripwire = FakeHub()
    try:
        run = run_snakemake(workdir, "all", tripwire.url, tmp_path)
    finally:
        tripwire.stop()

    assert run.returncode == 0, output(run)[-5000:]
    assert tripwire.requests == []
    assert "rule prefetch_model:" not in output(run)  # the marker said it was done
    result = hub_cell_result(workdir)
    assert result["status"] == "ok" and result["error"] is None, result.get("error")
    assert result["options"]["model_source"] == "bio/tiny" and result["train_instances"] == 64
    assert result["model_commit"] == sha
    meta = json.loads(
        next((workdir / "resources/tokenized/tiny-hub").rglob("meta.json")).read_text()
    )
    assert meta["tokenizer"] == str(snapshot)  # the tokenizer came from the cache's snapshot


def prefetch_then_lose_the_snapshot(hub, tiny, tmp_path) -> tuple[Path, Path, Path]:
    """`snakemake prefetch`, then the cache loses the model's snapshot while the marker stays,
    so Snakemake takes the prefetch as done (e.g. a cache cleaned by hand or a purge policy)."""
    import shutil

    sha = hub.add_repo("bio/tiny", {**tiny["safetensors"], **DECOYS})
    workdir, cache = hub_study(tmp_path)
    run = run_snakemake(workdir, "prefetch", hub.url, tmp_path)
    assert run.returncode == 0, output(run)[-5000:]
    snapshot = cache / "models--bio--tiny" / "snapshots" / sha
    shutil.rmtree(snapshot)
    assert (cache / ".prefetched/bio--tiny@main.json").is_file()
    return workdir, cache, snapshot


@pytest.mark.e2e
def test_an_offline_job_on_a_cache_without_the_model_names_model_hub_id_cache_and_fix(
    hub, tiny, tmp_path
):
    """What a tokenize job runs (its CLI, offline as the workflow sets it) on a cache that
    lost the model: one readable line, and nothing written."""
    from blurbflow.models.prefetch import offline_env

    workdir, cache, _ = prefetch_then_lose_the_snapshot(hub, tiny, tmp_path)
    hub.stop()
    run = subprocess.run(
        [
            str(Path(sys.executable).parent / "blurbflow"),
            "tokenize",
            "--task",
            "biosses",
            "--data",
            str(tmp_path / "nowhere"),
            "--model-name",
            "tiny-hub",
            "--tokenizer",
            "bio/tiny",
            "--input-key",
            "L64-pair",
            "--out",
            str(tmp_path / "tok"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **offline_env(cache)},
        timeout=120,
    )
    assert run.returncode != 0
    for part in ("'tiny-hub'", "(bio/tiny)", str(cache), "snakemake prefetch", "HF_HUB_OFFLINE=1"):
        assert part in run.stderr, run.stderr
    assert "Traceback" not in run.stderr  # one readable line, not a stack
    assert not (tmp_path / "tok").exists()


@pytest.mark.e2e
def test_a_cache_that_lost_the_model_is_repaired_by_snakemake_prefetch(hub, tiny, tmp_path):
    """Reading the workflow deletes no marker (a dry run changes nothing); `all` stops at the
    first job with the fix; `snakemake prefetch` checks every marker and downloads again what
    the snapshot lost, at the recorded commit; then `all` trains."""
    workdir, cache, snapshot = prefetch_then_lose_the_snapshot(hub, tiny, tmp_path)
    marker = cache / ".prefetched/bio--tiny@main.json"
    before = marker.read_bytes()
    dry = run_snakemake(workdir, "all", hub.url, tmp_path, "-n")
    assert dry.returncode == 0 and marker.read_bytes() == before, output(dry)[-3000:]
    assert "rule prefetch_model:" not in output(dry)

    stopped = run_snakemake(workdir, "all", hub.url, tmp_path)
    assert stopped.returncode != 0
    log = (workdir / "results/logs/tokenize/tiny-hub/biosses/L64-pair.log").read_text()
    assert "missing from" in log and "model.safetensors" in log, log[-2000:]
    assert "snakemake prefetch" in log

    repaired = run_snakemake(workdir, "prefetch", hub.url, tmp_path)
    assert repaired.returncode == 0, output(repaired)[-5000:]
    assert (snapshot / "model.safetensors").is_file() and marker.read_bytes() == before
    run = run_snakemake(workdir, "all", hub.url, tmp_path)
    assert run.returncode == 0, output(run)[-5000:]
    assert hub_cell_result(workdir)["status"] == "ok"


@pytest.mark.e2e
def test_markers_of_other_projects_never_stand_for_this_one(hub, tiny, tmp_path):
    """A shared cache: another project's marker under this config's model name (the old
    layout) or for another hub id does not satisfy prefetch, and no run deletes it."""
    workdir, cache = hub_study(tmp_path)
    foreign = {"hub_id": "other/model", "revision": "main", "commit": "0" * 40}
    planted = [cache / ".prefetched/tiny-hub.json", marker_path(cache, "other/model")]
    for path in planted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**foreign, "snapshot": "/nowhere", "files": ["x"]}))

    dry = run_snakemake(workdir, "prefetch", hub.url, tmp_path, "-n")

    assert dry.returncode == 0, output(dry)[-3000:]
    assert "rule prefetch_model:" in output(dry) and "bio--tiny@main.json" in output(dry)
    assert all(path.is_file() for path in planted)
