"""Models given by URL (`url:` + `sha256:`; blurbflow.models.archive, blurbflow.model_urls): a
tarball of a tiny BERT folder, laid out as Bio-LM's releases are (`Name/Name-hf/` beside other
files), served over loopback HTTP. Prefetch downloads it once, checks the pin, unpacks only the
model's files and writes the marker; a wrong or missing pin is refused with both digests and
leaves no model behind; jobs load the unpacked folder offline; `snakemake prefetch` then `all`
trains a cell from it."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import tarfile
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hub_helpers import FakeHub, hub_study, output, run_snakemake

from blurbflow.data.errors import DataFormatError
from blurbflow.model_urls import ArchiveError, check_markers, prefetch_archive
from blurbflow.models.archive import ArchiveNotCached, archive_folder, archive_marker
from blurbflow.models.prefetch import model_folder
from blurbflow.options import ModelOptions

from model_helpers import tiny_bert

INNER = "Tiny-PM/Tiny-PM-hf"  # as RoBERTa-base-PM-M3-Voc/RoBERTa-base-PM-M3-Voc-hf
MODEL_FILES = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}


class Server:
    """Files of a folder over HTTP on 127.0.0.1, with a log of the paths asked for."""

    def __init__(self, root: Path):
        self.requests: list[str] = []
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, *args):
                server.requests.append(self.path)

        handler = functools.partial(Handler, directory=str(root))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory) -> Path:
    texts = ["aspirin reduces the risk of stroke", "the gene BRCA1 is linked to cancer"] * 20
    model, _, tokenizer = tiny_bert(texts, 120, layers=2)
    folder = tmp_path_factory.mktemp("tiny") / "model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def tarball(folder: Path, dest: Path, inner: str = INNER, extra: dict | None = None) -> str:
    """A tar.gz of `folder` under `inner`, with `extra` files beside it; its sha256."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest, "w:gz") as archive:
        archive.add(folder, arcname=inner)
        for name, data in (extra or {}).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return hashlib.sha256(dest.read_bytes()).hexdigest()


@pytest.fixture
def served(tmp_path, tiny_folder):
    """(server, url, sha256) of the tiny model's tarball, with decoys beside its folder."""
    decoys = {"Tiny-PM/README.md": b"# tiny", f"{INNER}/training_args.bin": b"not weights"}
    sha = tarball(tiny_folder, tmp_path / "www/biolm/Tiny-PM-hf.tar.gz", extra=decoys)
    server = Server(tmp_path / "www")
    yield server, f"{server.url}/biolm/Tiny-PM-hf.tar.gz", sha
    server.stop()


def files_under(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def url_model(url: str, sha: str | None) -> ModelOptions:
    settings = {"sha256": sha} if sha else {}
    return ModelOptions(model="tiny-url", model_source=url, **settings)


def test_prefetch_downloads_verifies_and_unpacks_once(served, tiny_folder, tmp_path, monkeypatch):
    from huggingface_hub import constants

    from blurbflow.models.load import load_for_task, load_tokenizer
    from blurbflow.tasks import get_task

    server, url, sha = served
    cache = tmp_path / "cache"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # check_markers sets it to 0: restored after
    summary = prefetch_archive("tiny-url", url, sha, cache)

    folder = archive_folder(cache, sha)
    assert files_under(folder) == MODEL_FILES  # not training_args.bin, not the README
    for name in MODEL_FILES:
        assert (folder / name).read_bytes() == (tiny_folder / name).read_bytes()
    marker = json.loads(archive_marker(cache, url, sha).read_text())
    assert marker == summary and marker["sha256"] == sha and marker["url"] == url
    assert marker["archive_folder"] == INNER and set(marker["files"]) == MODEL_FILES
    assert files_under(cache) == {f"url-models/{sha}/{name}" for name in MODEL_FILES} | {
        f".prefetched/url--{sha}.json"
    }  # the download itself is gone, no work folder left
    assert server.requests == ["/biolm/Tiny-PM-hf.tar.gz"]

    assert prefetch_archive("tiny-url", url, sha, cache) == summary
    check_markers([str(archive_marker(cache, url, sha))])
    assert server.requests == ["/biolm/Tiny-PM-hf.tar.gz"]  # complete: nothing downloaded again

    # what jobs do: the folder from the options alone, in the process's cache, offline
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    model = url_model(url, sha)
    assert model_folder(model) == folder
    tokenizer = load_tokenizer(str(folder))
    loaded = load_for_task(str(folder), get_task("gad")).eval()
    batch = tokenizer(["aspirin reduces stroke", "BRCA1 cancer"], padding=True, return_tensors="pt")
    assert loaded(**batch).logits.shape == (2, 2)

    # a folder that lost a file is unpacked again from a fresh download by `prefetch`
    (folder / "model.safetensors").unlink()
    with pytest.raises(ArchiveNotCached, match="model.safetensors missing"):
        model_folder(model)
    check_markers([str(archive_marker(cache, url, sha))])
    assert files_under(folder) == MODEL_FILES and len(server.requests) == 2


def test_a_wrong_pin_names_model_and_both_digests_and_leaves_nothing(served, tmp_path):
    server, url, sha = served
    cache, wrong = tmp_path / "cache", "0" * 64
    with pytest.raises(ArchiveError) as error:
        prefetch_archive("tiny-url", url, wrong, cache)
    message = str(error.value)
    for part in ("'tiny-url'", sha, wrong, url, "models.tiny-url.sha256", "nothing was unpacked"):
        assert part in message, message
    assert files_under(cache) == set()
    assert not archive_folder(cache, wrong).exists()


def test_an_unpinned_archive_is_refused_with_the_digest_to_pin(served, tmp_path, monkeypatch):
    from huggingface_hub import constants

    server, url, sha = served
    cache = tmp_path / "cache"
    with pytest.raises(ArchiveError) as error:
        prefetch_archive("tiny-url", url, None, cache)
    assert f"sha256: {sha}" in str(error.value) and "models.tiny-url" in str(error.value)
    assert not (cache / "url-models" / sha).exists() and not (cache / ".prefetched").exists()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    with pytest.raises(ArchiveNotCached, match=r"models\.tiny-url\.sha256 is not set"):
        model_folder(url_model(url, None))

    prefetch_archive("tiny-url", url, sha, cache)  # pinned now: the kept download is used
    assert server.requests == ["/biolm/Tiny-PM-hf.tar.gz"]
    assert files_under(archive_folder(cache, sha)) == MODEL_FILES
    assert not (cache / "url-models/.downloads").exists() or not any(
        (cache / "url-models/.downloads").iterdir()
    )


def test_the_command_line_prints_the_digest_to_pin_and_then_unpacks(served, tmp_path):
    import subprocess
    import sys

    server, url, sha = served
    command = [sys.executable, "-m", "blurbflow", "prefetch-url", "--model", "tiny-url"]
    command += ["--url", url, "--cache-dir", str(tmp_path / "cache")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and f"sha256: {sha}" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    wrong = [*command, "--sha256", sha, "--out", str(tmp_path / "elsewhere.json")]
    run = subprocess.run(wrong, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "is not its marker" in run.stderr, run.stderr
    marker = archive_marker(tmp_path / "cache", url, sha)
    pinned = [*command, "--sha256", sha, "--out", str(marker)]
    run = subprocess.run(pinned, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["files"] == sorted(MODEL_FILES)
    assert server.requests == ["/biolm/Tiny-PM-hf.tar.gz"]


def test_archives_without_one_model_folder_are_refused_by_name(tmp_path, tiny_folder):
    www, cache = tmp_path / "www", tmp_path / "cache"
    www.mkdir()
    fairseq = www / "fairseq.tar.gz"
    with tarfile.open(fairseq, "w:gz") as archive:
        for name in ("Tiny-fairseq/model.pt", "Tiny-fairseq/dict.txt"):
            info = tarfile.TarInfo(name)
            info.size = 1
            archive.addfile(info, io.BytesIO(b"x"))
    sha = hashlib.sha256(fairseq.read_bytes()).hexdigest()
    with pytest.raises(ArchiveError, match=r"'fq'.*fairseq checkpoint \(model.pt, dict.txt\)"):
        prefetch_archive("fq", fairseq.as_uri(), sha, cache)

    two = www / "two.zip"
    with zipfile.ZipFile(two, "w") as archive:
        for inner in ("a", "b/c"):
            for path in sorted(tiny_folder.iterdir()):
                archive.write(path, f"{inner}/{path.name}")
    sha = hashlib.sha256(two.read_bytes()).hexdigest()
    with pytest.raises(ArchiveError, match=r"several model folders \(a, b/c\).*two\.subfolder"):
        prefetch_archive("two", two.as_uri(), sha, cache)
    with pytest.raises(ArchiveError, match=r"no config.json in models\.two\.subfolder 'b'"):
        prefetch_archive("two", two.as_uri(), sha, cache, subfolder="b")
    prefetch_archive("two", two.as_uri(), sha, cache, subfolder="b/c")
    assert files_under(archive_folder(cache, sha, "b/c")) == MODEL_FILES
    assert not archive_folder(cache, sha).exists()  # another subfolder, another folder


def test_an_archive_escaping_its_folder_is_refused(tmp_path, tiny_folder):
    evil = tmp_path / "evil.tar.gz"
    sha = tarball(tiny_folder, evil, extra={"../outside.txt": b"escaped"})
    with pytest.raises(DataFormatError, match=r"escapes the target folder"):
        prefetch_archive("evil", evil.as_uri(), sha, tmp_path / "cache")
    assert not (tmp_path / "outside.txt").exists()
    assert not any((tmp_path / "cache").rglob("*.tar.gz"))  # the pinned download is removed too
    assert not archive_folder(tmp_path / "cache", sha).exists()


@pytest.mark.e2e
def test_snakemake_prefetch_then_all_trains_a_cell_from_the_url_model(served, tmp_path):
    server, url, sha = served
    tripwire = FakeHub()  # no hub request at all may happen
    try:
        unpinned, _ = hub_study(tmp_path / "unpinned", {"tiny-url": {"url": url, "sha256": None}})
        run = run_snakemake(unpinned, "prefetch", tripwire.url, tmp_path)
        assert run.returncode != 0
        log = next((unpinned / "results/logs/prefetch").glob("url--unpinned-*.log")).read_text()
        assert f"sha256: {sha}" in log, log[-3000:]

        entry = {"url": url, "sha256": sha, "size": "tiny"}
        workdir, cache = hub_study(tmp_path / "pinned", {"tiny-url": entry})
        run = run_snakemake(workdir, "prefetch", tripwire.url, tmp_path)
        assert run.returncode == 0, output(run)[-5000:]
        assert "rule prefetch_url:" in output(run)
        assert files_under(archive_folder(cache, sha)) == MODEL_FILES
        run = run_snakemake(workdir, "all", tripwire.url, tmp_path)
        assert run.returncode == 0, output(run)[-5000:]
        assert "rule prefetch_url:" not in output(run)  # the marker said it was done
        run = run_snakemake(workdir, "prefetch", tripwire.url, tmp_path)  # checks every marker
        assert run.returncode == 0, output(run)[-5000:]
        assert (
            f"url--{sha}.json: complete"
            in (workdir / "results/logs/prefetch/check.log").read_text()
        )
        # one download per cache (the unpinned study's and this one's), none by the re-runs
        assert server.requests == ["/biolm/Tiny-PM-hf.tar.gz"] * 2
    finally:
        tripwire.stop()
    assert tripwire.requests == []
    cell = workdir / "results/cells/tiny-url/biosses/quick/lr0.001-bs16/seed1/result.json"
    result = json.loads(cell.read_text())
    assert result["status"] == "ok" and result["error"] is None, result.get("error")
    assert result["options"]["model_source"] == url and result["options"]["sha256"] == sha
    assert result["model_commit"] is None and result["train_instances"] == 64
    meta = next((workdir / "resources/tokenized/tiny-url").rglob("meta.json")).read_text()
    tokenizer = Path(json.loads(meta)["tokenizer"])
    assert tokenizer.resolve() == archive_folder(cache, sha).resolve()


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"url": "https://example.org/m.tar.gz"}, "sha256"),  # the pin's key is required
        ({"url": "ftp://example.org/m.tar.gz", "sha256": None}, "url"),
        ({"url": "https://example.org/m.tar.gz", "sha256": "ABC"}, "sha256"),
        ({"url": "https://x.org/m.tgz", "sha256": None, "subfolder": "../up"}, "subfolder"),
        ({"url": "https://x.org/m.tgz", "sha256": None, "hub_id": "org/m"}, "oneOf|valid"),
    ],
)
def test_the_schema_refuses_bad_url_entries(entry, message):
    import jsonschema
    import yaml

    from workflow_helpers import REPO

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    models = {**schema["properties"]["models"], "$defs": schema["$defs"]}
    jsonschema.validate({"m": {"url": "https://x.org/m.tgz", "sha256": None}}, models)
    jsonschema.validate({"m": {"url": "https://x.org/m.tgz", "sha256": "a" * 64}}, models)
    with pytest.raises(jsonschema.ValidationError, match=message):
        jsonschema.validate({"m": entry}, models)


def test_a_url_without_its_pin_key_is_named_with_what_an_entry_takes():
    import yaml

    from blurbflow.config.schema import check_values
    from blurbflow.util.errors import ConfigError

    from workflow_helpers import REPO

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    config = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    config["models"]["x"] = {"url": "https://x.org/m.tgz"}
    with pytest.raises(ConfigError, match=r"models\.x: .*url with sha256 \(sha256: null until"):
        check_values(config, schema)
