"""Fetching raw sources: mirror URLs, retries, partial downloads, safe extraction, checksums."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from blurbflow.data import fetch
from blurbflow.data.archives import extract
from blurbflow.data.errors import DataFormatError, ManualDownloadMissing
from blurbflow.data.generate import generate_source
from blurbflow.data.prepare import prepare_task
from blurbflow.tasks.sources import SOURCES

PAYLOAD = b"token\tO\n" * 1000


class FlakyHandler(BaseHTTPRequestHandler):
    """/flaky fails twice with 503, /short sends fewer bytes than announced, /ok is fine."""

    hits: dict[str, int] = {}

    def log_message(self, *args):
        pass

    def do_GET(self):
        hits = FlakyHandler.hits[self.path] = FlakyHandler.hits.get(self.path, 0) + 1
        if self.path == "/missing":
            self.send_error(404)
            return
        if self.path == "/flaky" and hits <= 2:
            self.send_error(503)
            return
        if self.path.startswith("/trickle"):  # one byte every 0.05 s, for 60 s at most
            self.send_response(200)
            self.send_header("Content-Length", str(len(PAYLOAD)))
            self.end_headers()
            try:
                for byte in PAYLOAD[:1200]:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.05)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up, as it should
            return
        body = PAYLOAD[: len(PAYLOAD) // 2] if self.path == "/short" else PAYLOAD
        self.send_response(200)
        self.send_header("Content-Length", str(len(PAYLOAD)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FlakyHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_mirror_rewrites_host_and_path():
    url = "https://raw.githubusercontent.com/a/b/train.tsv"
    assert fetch.resolve_url(url, None) == url
    assert fetch.resolve_url(url, "http://127.0.0.1:8000/") == (
        "http://127.0.0.1:8000/raw.githubusercontent.com/a/b/train.tsv"
    )
    assert (
        fetch.resolve_url(url, "/srv/mirror")
        == "/srv/mirror/raw.githubusercontent.com/a/b/train.tsv"
    )


def test_transient_errors_are_retried(server, tmp_path):
    dest = fetch.download(f"{server}/flaky", tmp_path / "f.tsv", backoff=0.01)
    assert dest.read_bytes() == PAYLOAD and FlakyHandler.hits["/flaky"] == 3


def test_partial_download_is_never_used(server, tmp_path):
    with pytest.raises(DataFormatError, match="download failed after 3 tries"):
        fetch.download(f"{server}/short", tmp_path / "s.tsv", retries=2, backoff=0.01)
    assert list(tmp_path.iterdir()) == []  # neither the file nor its .part


def test_not_found_fails_at_once_naming_the_url(server, tmp_path):
    with pytest.raises(DataFormatError, match=r"/missing: HTTP 404 .*mirror"):
        fetch.download(f"{server}/missing", tmp_path / "m.tsv", backoff=0.01)
    assert FlakyHandler.hits["/missing"] == 1 and not list(tmp_path.iterdir())


def test_a_trickling_server_is_cut_off_at_the_deadline(server, tmp_path):
    started = time.monotonic()
    with pytest.raises(DataFormatError, match=r"failed after 2 tries .*not complete after 0.5 s"):
        fetch.download(
            f"{server}/trickle",
            tmp_path / "t.tsv",
            retries=1,
            backoff=0.01,
            timeout=5,
            deadline=0.5,
        )
    assert time.monotonic() - started < 5  # the socket timeout alone would never fire
    assert list(tmp_path.iterdir()) == []


def test_a_killed_fetch_leaves_nothing_the_next_fetch_keeps(server, tmp_path):
    """SIGKILL mid-download leaves the temporary folder and its .part; the next fetch of the
    same source removes them before it starts."""
    code = (
        "import sys; from blurbflow.data import fetch; "
        "fetch.SOURCES['gad'] = fetch.SOURCES['gad'].__class__(**{**vars(fetch.SOURCES['gad']), "
        f"'urls': ({server + '/trickle/gad.zip'!r},)}}); "
        f"fetch.fetch_source('gad', {str(tmp_path / 'raw/gad')!r})"
    )
    process = subprocess.Popen([sys.executable, "-c", code])
    for _ in range(200):
        if list((tmp_path / "raw").glob(".gad.*/.downloads/*.part")):
            break
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert list((tmp_path / "raw").glob(".gad.*/.downloads/*.part"))  # what SIGKILL leaves
    with pytest.raises(DataFormatError):  # any fetch of gad starts by removing the leftovers
        fetch.fetch_source("gad", tmp_path / "raw/gad", mirror=str(tmp_path / "empty-mirror"))
    assert list((tmp_path / "raw").iterdir()) == []


def _zip(path: Path, entries: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


def _tar(path: Path, members: list[tarfile.TarInfo]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for member in members:
            data = b"x" * member.size if member.isfile() else None
            tf.addfile(member, io.BytesIO(data) if data else None)
    return path


def _member(name: str, kind=tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    info.size = 3 if kind == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize(
    ("entry", "message"),
    [("../evil.txt", "escapes the target folder"), ("/etc/evil.txt", "absolute path")],
)
def test_zip_entries_escaping_the_target_are_refused(tmp_path, entry, message):
    archive = _zip(tmp_path / "a.zip", {"ok/file.txt": b"fine", entry: b"bad"})
    with pytest.raises(DataFormatError, match=message) as error:
        extract(archive, tmp_path / "out")
    assert "a.zip" in str(error.value) and entry in str(error.value)
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "out/ok").exists()


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (_member("data/../../evil"), "escapes the target folder"),
        (_member("link", tarfile.SYMTYPE, "/etc/passwd"), "outside"),
        (_member("dir/link", tarfile.SYMTYPE, "../../outside"), "outside"),
        (_member("hard", tarfile.LNKTYPE, "../outside"), "outside"),
        (_member("dev", tarfile.CHRTYPE), "device or special"),
    ],
)
def test_tar_entries_escaping_the_target_are_refused(tmp_path, member, message):
    archive = _tar(tmp_path / "a.tar.gz", [_member("data/ok.txt"), member])
    with pytest.raises(DataFormatError, match=message):
        extract(archive, tmp_path / "out")
    assert not (tmp_path / "out/data/ok.txt").exists()  # checked before anything is written


def test_tar_link_inside_the_target_is_allowed(tmp_path):
    archive = _tar(
        tmp_path / "a.tar.gz", [_member("d/f.txt"), _member("d/l", tarfile.SYMTYPE, "f.txt")]
    )
    extract(archive, tmp_path / "out")
    assert (tmp_path / "out/d/l").read_bytes() == b"xxx"


@pytest.mark.parametrize("suffix", ["zip", "tar.gz"])
def test_truncated_archives_are_reported(tmp_path, suffix):
    whole = tmp_path / f"whole.{suffix}"
    if suffix == "zip":
        _zip(whole, {f"f{i}.txt": bytes(range(256)) * 40 for i in range(5)})
    else:
        _tar(whole, [_member(f"f{i}.txt") for i in range(50)])
    cut = tmp_path / f"cut.{suffix}"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(DataFormatError, match="truncated or corrupt|not a zip or tar"):
        extract(cut, tmp_path / "out")


def _mirror_of(source: str, generated: Path, mirror: Path) -> None:
    """Lay generated raw files out as the original URLs would serve them."""
    spec = SOURCES[source]
    for url in spec.urls:
        target = mirror / url.split("://", 1)[1]
        target.parent.mkdir(parents=True, exist_ok=True)
        if spec.archive:
            with zipfile.ZipFile(target, "w") as zf:
                for file in sorted(generated.rglob("*")):
                    if file.is_file():
                        zf.write(file, file.relative_to(generated).as_posix())
        else:
            (target).write_bytes((generated / Path(url).name).read_bytes())


def test_fetch_from_mirror_folder_then_prepare(tmp_path, monkeypatch):
    generate_source("gad", tmp_path / "gen")
    _mirror_of("gad", tmp_path / "gen", tmp_path / "mirror")
    digest, _ = fetch.tree_digest(tmp_path / "gen", "GAD/*/*.tsv")
    monkeypatch.setitem(SOURCES, "gad", replace(SOURCES["gad"], checksums={"GAD/*/*.tsv": digest}))
    fetch.fetch_source("gad", tmp_path / "raw/gad", mirror=str(tmp_path / "mirror"))
    stats = prepare_task("gad", tmp_path / "raw", tmp_path / "data/gad")
    assert stats["splits"]["train"]["instances"] == 4261


def test_checksum_mismatch_stops_and_leaves_nothing(tmp_path):
    generate_source("ncbidisease", tmp_path / "gen")  # synthetic bytes differ from the real files
    _mirror_of("ncbidisease", tmp_path / "gen", tmp_path / "mirror")
    with pytest.raises(DataFormatError, match=r"train.tsv: sha256 \w+ does not match the registry"):
        fetch.fetch_source(
            "ncbidisease", tmp_path / "raw/ncbidisease", mirror=str(tmp_path / "mirror")
        )
    assert not (tmp_path / "raw/ncbidisease").exists() and list((tmp_path / "raw").iterdir()) == []


def test_missing_manual_download_says_where_to_get_and_put_it(tmp_path):
    with pytest.raises(ManualDownloadMissing) as error:
        fetch.fetch_source("bioasq", tmp_path / "raw/bioasq", manual_dir=tmp_path / "manual")
    message = str(error.value)
    assert "BioASQ-training7b.zip" in message and "participants-area.bioasq.org" in message
    assert str(tmp_path / "manual") in message and not (tmp_path / "raw/bioasq").exists()
