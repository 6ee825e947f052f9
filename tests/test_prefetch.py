"""Prefetch (DESIGN §10) against a fake Hugging Face hub served on 127.0.0.1: only config,
tokenizer and one set of weights are downloaded, a second prefetch downloads nothing, and with
the hub gone and HF_HUB_OFFLINE=1 the cache alone loads the model."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import torch

from blurbflow.models.load import load_for_task, load_tokenizer
from blurbflow.models.prefetch import (
    ModelNotCached,
    cached_model_dir,
    local_source,
    offline_env,
    prefetch_model,
    select_files,
)
from blurbflow.tasks import get_task

from model_helpers import tiny_bert

DECOYS = {
    "tf_model.h5": b"HDF5 decoy",
    "flax_model.msgpack": b"msgpack decoy",
    "onnx/model.onnx": b"onnx decoy",
    "training_args.bin": b"not weights",
    "README.md": b"# tiny",
}
TOKENIZER = {"tokenizer.json", "tokenizer_config.json"}


# ---------------------------------------------------------------- a fake hub
class FakeHub:
    """The endpoints huggingface_hub 2.4 uses for model_info, list_repo_tree and
    snapshot_download/hf_hub_download (plain HTTP: no Xet headers), with a request log."""

    def __init__(self):
        self.repos: dict[str, tuple[str, dict[str, bytes]]] = {}
        self.requests: list[tuple[str, str]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                hub.requests.append(("HEAD", self.path))
                hub.respond(self, head=True)

            def do_GET(self):
                hub.requests.append(("GET", self.path))
                hub.respond(self, head=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # Keep-alive connections of the client hold handler threads: never wait for them.
        self.server.daemon_threads, self.server.block_on_close = True, False
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def stop(self):
        if self.thread.is_alive():
            self.server.shutdown()
            self.server.server_close()

    def add_repo(self, repo_id: str, files: dict[str, bytes]) -> str:
        digest = hashlib.sha1(repo_id.encode())
        for name in sorted(files):
            digest.update(name.encode() + hashlib.sha1(files[name]).digest())
        self.repos[repo_id] = (digest.hexdigest(), dict(files))
        return digest.hexdigest()

    def downloads(self, name_re: str = ".*") -> list[tuple[str, str]]:
        """Requests for /resolve/ of files whose name matches `name_re`."""
        return [
            (m, p) for m, p in self.requests if "/resolve/" in p and re.search(name_re, unquote(p))
        ]

    @staticmethod
    def send(handler, status, body=b"", headers=None, head=False):
        handler.send_response(status)
        for key, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
            handler.send_header(key, value)
        handler.end_headers()
        if not head:
            handler.wfile.write(body)

    def send_json(self, handler, data, head):
        body = json.dumps(data).encode()
        self.send(handler, 200, body, {"Content-Type": "application/json"}, head)

    def respond(self, handler, head: bool):
        path = unquote(urlsplit(handler.path).path)
        api = re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?", path)
        tree = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)", path)
        resolve = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        match = api or tree or resolve
        if match is None or match.group(1) not in self.repos:
            error = {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"}
            return self.send(handler, 404, b"", error, head)
        sha, files = self.repos[match.group(1)]
        if (match.group(2) or "main") not in ("main", sha):
            error = {"X-Error-Code": "RevisionNotFound", "X-Error-Message": "Invalid rev id"}
            return self.send(handler, 404, b"", error, head)
        if api:
            siblings = [{"rfilename": name} for name in sorted(files)]
            info = {"id": match.group(1), "sha": sha, "private": False, "siblings": siblings}
            return self.send_json(handler, info, head)
        if tree:
            entries = [
                {
                    "type": "file",
                    "path": name,
                    "size": len(data),
                    "oid": hashlib.sha1(data).hexdigest(),
                }
                for name, data in sorted(files.items())
            ]
            return self.send_json(handler, entries, head)
        name = match.group(3)
        if name not in files:
            error = {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": sha}
            return self.send(handler, 404, b"", error, head)
        etag = f'"{hashlib.sha256(files[name]).hexdigest()}"'
        headers = {"X-Repo-Commit": sha, "ETag": etag, "Content-Type": "application/octet-stream"}
        return self.send(handler, 200, files[name], headers, head)


@pytest.fixture
def hub(monkeypatch):
    from huggingface_hub import constants

    server = FakeHub()
    # huggingface_hub reads HF_ENDPOINT once, at import (constants.ENDPOINT and the /resolve/
    # URL template): point both at the fake hub so that no request can leave this machine.
    monkeypatch.setattr(constants, "ENDPOINT", server.url)
    monkeypatch.setattr(
        constants,
        "HUGGINGFACE_CO_URL_TEMPLATE",
        server.url + "/{repo_id}/resolve/{revision}/{filename}",
    )
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    yield server
    server.stop()


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
    assert local_source("tiny-bio", {"hub_id": "bio/tiny"}, cache) == str(snapshot)
    assert local_source("demo", {"path": "resources/models/tiny"}, cache) == "resources/models/tiny"
    model = forward(folder)
    assert torch.equal(
        model.bert.embeddings.word_embeddings.weight, word_embeddings(tiny["safetensors"])
    )


def test_prefetch_then_offline_job_in_fresh_processes(hub, tiny, tmp_path):
    """The real switches: HF_ENDPOINT for the login node, offline_env() for the job."""
    hub.add_repo("bio/tiny", {**tiny["safetensors"], **DECOYS})
    cache = tmp_path / "hf-cache"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    base["HF_HOME"] = str(tmp_path / "hf-home")
    prefetch = (
        "import json, sys; from blurbflow.models.prefetch import prefetch_model; "
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


# ---------------------------------------------------------------- through real snakemake runs
# `snakemake prefetch` and `snakemake all` on a copy of the workflow whose one model is the fake
# hub's repo. The snakemake process gets HF_ENDPOINT (the fake hub); `prefetch` also gets
# HF_HUB_OFFLINE=1, as a cluster may export for everyone, so the prefetch rule must switch it
# off for itself, while `all` gets HF_HUB_OFFLINE=0, so its jobs must switch it on themselves.
# The study is that model × biosses (generated data, 64 pairs) × a 1-epoch recipe × 1 seed.
HUB_STUDY = "config/hub.yaml"
DECOY_NAMES = r"\.(h5|msgpack|onnx)$|training_args|README"


def hub_study(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the workflow with `HUB_STUDY` (model tiny-hub = bio/tiny); its hf_cache."""
    from workflow_helpers import copy_workflow

    workdir, cache = copy_workflow(tmp_path / "workflow"), tmp_path / "hf-cache"
    config = {
        "code_version": "1",
        "data": {"source": "generated", "generated_seed": 0},
        "hf_cache": str(cache),
        "models": {"tiny-hub": {"hub_id": "bio/tiny", "size": "tiny"}},
        # max_length 64: the tiny BERT has 64 positions
        "recipes": {"quick": {"lr": 1.0e-3, "batch_size": 16, "epochs": 1, "max_length": 64}},
        "studies": {
            "hub": {
                "title": "hub",
                "models": ["tiny-hub"],
                "tasks": ["biosses"],
                "recipes": ["quick"],
                "seeds": 1,
            }
        },
    }
    (workdir / HUB_STUDY).write_text(json.dumps(config, indent=1))  # JSON is YAML
    return workdir, cache


def run_snakemake(workdir: Path, target: str, endpoint: str, tmp_path: Path, *args: str):
    """snakemake `target` with HF_ENDPOINT=`endpoint`; HF_HUB_OFFLINE=1 for `prefetch` (its rule
    must go online by itself), 0 for the others (their jobs must go offline by themselves)."""
    from workflow_helpers import snakemake

    env = {
        "HF_ENDPOINT": endpoint,
        "HF_HUB_OFFLINE": "1" if target == "prefetch" else "0",
        "HF_HOME": str(tmp_path / "hf-home"),
    }
    cores = "1" if target == "prefetch" else "2"
    return snakemake(
        workdir, target, "--configfile", HUB_STUDY, "--cores", cores, *args, env=env, timeout=300
    )


def output(run: subprocess.CompletedProcess) -> str:
    return run.stdout + run.stderr


def hub_cell_result(workdir: Path) -> dict:
    path = workdir / "results/cells/tiny-hub/biosses/quick/lr0.001-bs16/seed1/result.json"
    return json.loads(path.read_text())


@pytest.mark.e2e
def test_snakemake_prefetch_then_all_trains_from_the_cache_offline(hub, tiny, tmp_path):
    sha = hub.add_repo("bio/tiny", {**tiny["safetensors"], **DECOYS})
    workdir, cache = hub_study(tmp_path)

    run = run_snakemake(workdir, "prefetch", hub.url, tmp_path)

    assert run.returncode == 0, output(run)[-5000:]
    marker = json.loads((cache / ".prefetched/tiny-hub.json").read_text())
    snapshot = cache / "models--bio--tiny" / "snapshots" / sha
    expected = {"config.json", "model.safetensors", *TOKENIZER}
    assert marker["model"] == "tiny-hub" and marker["hub_id"] == "bio/tiny"
    assert marker["commit"] == sha and marker["revision"] == "main"
    assert marker["snapshot"] == str(snapshot) and marker["cache_dir"] == str(cache)
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
    assert (cache / ".prefetched/tiny-hub.json").is_file()
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
        [str(Path(sys.executable).parent / "blurbflow"), "tokenize", "--task", "biosses",
         "--data", str(tmp_path / "nowhere"), "--model-name", "tiny-hub",
         "--tokenizer", "bio/tiny", "--input-key", "L64-pair", "--out", str(tmp_path / "tok")],
        capture_output=True, text=True, env={**os.environ, **offline_env(cache)}, timeout=120,
    )
    assert run.returncode != 0
    for part in ("'tiny-hub'", "(bio/tiny)", str(cache), "snakemake prefetch", "HF_HUB_OFFLINE=1"):
        assert part in run.stderr, run.stderr
    assert "Traceback" not in run.stderr  # one readable line, not a stack
    assert not (tmp_path / "tok").exists()


@pytest.mark.e2e
def test_a_cache_that_lost_the_model_is_prefetched_again_by_the_next_run(hub, tiny, tmp_path):
    """The stale marker is dropped when the workflow is read, so `all` prefetches again: with
    the hub down that step fails (not a job on a compute node); with it up, all trains."""
    workdir, cache, snapshot = prefetch_then_lose_the_snapshot(hub, tiny, tmp_path)
    down = run_snakemake(workdir, "all", "http://127.0.0.1:9", tmp_path)
    assert down.returncode != 0 and "Error in rule prefetch_model" in output(down)
    assert not (workdir / "resources/tokenized/tiny-hub").exists()

    run = run_snakemake(workdir, "all", hub.url, tmp_path)
    assert run.returncode == 0, output(run)[-5000:]
    assert (snapshot / "model.safetensors").is_file()
    assert hub_cell_result(workdir)["status"] == "ok"
