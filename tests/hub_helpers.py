"""A fake Hugging Face hub on 127.0.0.1 (the endpoints huggingface_hub uses for model_info,
list_repo_tree and snapshot_download), with branches/tags, a request log and a slow mode."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


class FakeHub:
    """The endpoints huggingface_hub 2.4 uses for model_info, list_repo_tree and
    snapshot_download/hf_hub_download (plain HTTP: no Xet headers), with a request log."""

    def __init__(self):
        # repo -> ref (branch, tag or commit) -> (commit, files)
        self.repos: dict[str, dict[str, tuple[str, dict[str, bytes]]]] = {}
        self.trickle: set[str] = set()  # files served one byte at a time, slowly
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

    def add_repo(self, repo_id: str, files: dict[str, bytes], ref: str = "main") -> str:
        """A commit of `files`, which `ref` (a branch or tag) then points at; its sha."""
        digest = hashlib.sha1(repo_id.encode())
        for name in sorted(files):
            digest.update(name.encode() + hashlib.sha1(files[name]).digest())
        sha = digest.hexdigest()
        refs = self.repos.setdefault(repo_id, {})
        refs[ref] = refs[sha] = (sha, dict(files))
        return sha

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
        refs = self.repos[match.group(1)]
        if (match.group(2) or "main") not in refs:
            error = {"X-Error-Code": "RevisionNotFound", "X-Error-Message": "Invalid rev id"}
            return self.send(handler, 404, b"", error, head)
        sha, files = refs[match.group(2) or "main"]
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
        if name in self.trickle and not head:
            return self.send_slowly(handler, files[name], headers)
        return self.send(handler, 200, files[name], headers, head)

    @staticmethod
    def send_slowly(handler, body: bytes, headers: dict):
        """A byte every 0.2 s: never silent long enough for a read timeout."""
        handler.send_response(200)
        for key, value in {"Content-Length": str(len(body)), **headers}.items():
            handler.send_header(key, value)
        handler.end_headers()
        try:
            for i in range(len(body)):
                handler.wfile.write(body[i : i + 1])
                handler.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass  # the client gave up


def serve_hub(monkeypatch):
    """Start a FakeHub and point huggingface_hub at it (a fixture's body: yields the hub)."""
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


# ---------------------------------------------------------------- a study of hub models
# `snakemake prefetch` and `snakemake all` on a copy of the workflow whose models come from the
# fake hub. The study is those models × biosses (generated data, 64 pairs) × a 1-epoch recipe
# × 1 seed.
HUB_STUDY = "config/hub.yaml"


def hub_config(cache: Path, models: dict | None = None) -> dict:
    """The study of `models` (default: tiny-hub = bio/tiny) × biosses × a 1-epoch recipe."""
    models = models or {"tiny-hub": {"hub_id": "bio/tiny", "size": "tiny"}}
    return {
        "code_version": "1",
        "data": {"source": "generated", "generated_seed": 0},
        "hf_cache": str(cache),
        "models": models,
        # max_length 64: the tiny BERT has 64 positions
        "recipes": {"quick": {"lr": 1.0e-3, "batch_size": 16, "epochs": 1, "max_length": 64}},
        "studies": {
            "hub": {
                "title": "hub",
                "models": sorted(models),
                "tasks": ["biosses"],
                "recipes": ["quick"],
                "seeds": 1,
            }
        },
    }


def hub_study(tmp_path: Path, models: dict | None = None) -> tuple[Path, Path]:
    """A copy of the workflow with `HUB_STUDY` (`hub_config`); its hf_cache."""
    from workflow_helpers import copy_workflow

    workdir, cache = copy_workflow(tmp_path / "workflow"), tmp_path / "hf-cache"
    config = hub_config(cache, models)
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


def other_weights(files: dict[str, bytes], shift: float = 1.0) -> dict[str, bytes]:
    """The same model with other weights (as a later commit would have)."""
    from safetensors.torch import load, save

    state = {k: v + shift for k, v in load(files["model.safetensors"]).items()}
    return {**files, "model.safetensors": save(state)}
