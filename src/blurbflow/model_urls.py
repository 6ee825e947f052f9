"""Prefetch a model given by URL (`url:` + `sha256:`, blurbflow.models.archive) on a machine
with internet: download the archive with the dataset side's downloader (retries, a `.part` file
renamed when complete, an overall deadline), check its sha256 against the entry's pin, extract
it with the dataset side's safe extraction (no absolute paths, `..` or links leaving the
folder), find the Hugging Face model folder in it, and move that folder's config, tokenizer and
one set of weights (`select_files`, as for hub models) into the cache with one rename; only
then is the marker written. This module joins `models` and `data`, which never import each
other.

What is left behind: nothing on a digest mismatch (the download is deleted, nothing unpacked);
for an entry without a pin, the downloaded archive alone (`{cache}/url-models/.downloads/`), so
that pinning the digest it printed does not download it again; a pinned prefetch removes it
once unpacked (or found to hold no usable model). A second prefetch of a complete folder
downloads nothing."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from blurbflow.data.archives import extract
from blurbflow.data.fetch import download
from blurbflow.models.archive import (
    FOLDER,
    archive_folder,
    archive_marker,
    archive_name,
    folder_problem,
    is_archive_marker,
    read_json,
)
from blurbflow.models.download import DEADLINE_S, repair_marker, write_marker
from blurbflow.models.prefetch import missing_shards, select_files
from blurbflow.util.digests import file_sha256

# What a fairseq checkpoint archive holds instead of a Hugging Face folder.
FAIRSEQ_FILES = ("model.pt", "dict.txt")


class ArchiveError(ValueError):
    """A URL model that cannot be used: unpinned, a digest mismatch, no model folder inside."""


def _log(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def kept_download(cache_dir: Path, url: str, subfolder: str | None = None) -> Path:
    """Where the archive of `url` is downloaded to (and kept while it is not pinned); one per
    subfolder, so that two entries unpacking one archive never share a download."""
    name = PurePosixPath(urlsplit(url).path).name or "archive"
    return Path(cache_dir) / FOLDER / ".downloads" / f"{archive_name(url, None, subfolder)}-{name}"


def find_model_folder(root: Path, subfolder: str | None, name: str, url: str) -> Path:
    """The folder of the extracted archive `root` that holds the model: the entry's
    `subfolder`, or else the one folder with a config.json."""
    root = root.resolve()
    found = sorted(p.parent for p in root.rglob("config.json") if p.is_file())
    shown = ", ".join(p.relative_to(root).as_posix() or "." for p in found) or "none"
    if subfolder:
        folder = (root / subfolder).resolve()
        if root not in (folder, *folder.parents) or not (folder / "config.json").is_file():
            raise ArchiveError(
                f"model {name!r}: the archive from {url} has no config.json in "
                f"models.{name}.subfolder {subfolder!r} (folders with one: {shown})"
            )
        return folder
    if len(found) == 1:
        return found[0]
    if found:
        raise ArchiveError(
            f"model {name!r}: the archive from {url} holds several model folders ({shown}); "
            f"name the one to use as models.{name}.subfolder"
        )
    fairseq = [f for f in FAIRSEQ_FILES if any(root.rglob(f))]
    hint = (
        f"it holds a fairseq checkpoint ({', '.join(fairseq)}): use the release's Hugging Face "
        "archive instead (Bio-LM publishes a `-hf.tar.gz` beside each `-fairseq.tar.gz`)"
        if fairseq
        else "a model folder saved with save_pretrained is expected"
    )
    raise ArchiveError(f"model {name!r}: no config.json in the archive from {url}; {hint}")


def _unpack(name: str, url: str, sha256: str, subfolder: str | None, archive: Path, cache_dir):
    """Extract `archive` and move its model folder's files to their place in one rename."""
    folder = archive_folder(cache_dir, sha256, subfolder)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        extract(archive, work / "archive")
        root = (work / "archive").resolve()
        source = find_model_folder(root, subfolder, name, url)
        present = [p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file()]
        try:
            files = select_files(present)
        except ValueError as error:
            raise ArchiveError(f"model {name!r}: the archive from {url}: {error}") from None
        missing = missing_shards(source, files)
        if missing:
            raise ArchiveError(f"model {name!r}: the archive from {url} lacks shards {missing}")
        staged = work / "model"
        for file in files:
            (staged / file).parent.mkdir(parents=True, exist_ok=True)
            os.replace(source / file, staged / file)
        if folder.exists():  # a folder that lost files (the marker said so): replaced whole
            shutil.rmtree(folder)
        os.replace(staged, folder)
        inside = source.relative_to(root).as_posix()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "url": url,
        "sha256": sha256,
        "subfolder": subfolder,
        "archive_folder": inside,
        "folder": str(folder.resolve()),
        "files": files,
        "bytes": sum(os.path.getsize(folder / f) for f in files),
        "weights": "safetensors" if any(f.endswith(".safetensors") for f in files) else "bin",
    }


def _remove_leftovers(folder: Path) -> None:
    """Work folders of this archive that a killed prefetch left (Snakemake runs one prefetch of
    a marker at a time, so any that exist now are dead)."""
    for stale in sorted(folder.parent.glob(f".{folder.name}.*")):
        _log(f"removing {stale}: left by an interrupted prefetch")
        shutil.rmtree(stale, ignore_errors=True)


def prefetch_archive(
    name: str, url: str, sha256: str | None, cache_dir: Path, subfolder: str | None = None
) -> dict:
    """Download, verify and unpack the model `name` given by `url` into `cache_dir` (the
    config's hf_cache) and write its marker; the marker's content. ArchiveError when the entry
    has no pin (naming the digest to pin), when the digest differs (naming both), or when the
    archive holds no usable model folder; the data layer's DataFormatError when the download
    or the extraction fails."""
    cache_dir = Path(cache_dir)
    marker = archive_marker(cache_dir, url, sha256, subfolder)
    if sha256:
        folder = archive_folder(cache_dir, sha256, subfolder)
        done = read_json(marker)
        if done is not None and folder_problem(done, folder) is None:
            _log(f"model {name!r}: {folder} is complete (sha256 {sha256}); nothing to download")
            return done
        folder.parent.mkdir(parents=True, exist_ok=True)
        _remove_leftovers(folder)
    kept = kept_download(cache_dir, url, subfolder)
    if kept.is_file():
        _log(f"model {name!r}: using the archive downloaded before, {kept}")
    else:
        download(url, kept, deadline=DEADLINE_S)
    digest = file_sha256(kept)
    _log(f"model {name!r}: {url} has sha256 {digest}")
    if not sha256:
        raise ArchiveError(
            f"model {name!r}: models.{name}.sha256 is not set, so the archive from {url} is not "
            f"used. Its download has sha256 {digest} (kept as {kept}; it is not downloaded "
            f"again): check it against the publisher's digest where one is given, then pin "
            f"it with `sha256: {digest}` under models.{name} and run `snakemake prefetch` again"
        )
    if digest != sha256:
        kept.unlink(missing_ok=True)
        raise ArchiveError(
            f"model {name!r}: the archive from {url} has sha256 {digest}, but "
            f"models.{name}.sha256 pins {sha256}; the download was deleted and nothing was "
            "unpacked. The file changed upstream or the download is damaged: check the URL "
            "and the pin, then run `snakemake prefetch` again"
        )
    try:
        summary = _unpack(name, url, sha256, subfolder, kept, cache_dir)
    finally:  # unpacked, or an archive that cannot be (the pinned file will not change)
        kept.unlink(missing_ok=True)
    _log(f"model {name!r}: {len(summary['files'])} files, {summary['bytes']} bytes in {folder}")
    return write_marker(summary, marker)


def repair_archive(marker: Path) -> str:
    """Check a URL model's marker against its folder; download and unpack it again when files
    went missing. What was done, as one line."""
    info = read_json(marker)
    if info is None or not info.get("url") or not info.get("sha256"):
        raise ArchiveError(f"{marker}: not a readable URL model marker; delete it and prefetch")
    folder = archive_folder(marker.parent.parent, info["sha256"], info.get("subfolder"))
    problem = folder_problem(info, folder)
    if problem is None:
        return f"{marker.name}: complete (sha256 {info['sha256']})"
    _log(f"{marker.name}: {problem}; downloading {info['url']} again")
    name = PurePosixPath(urlsplit(info["url"]).path).name
    prefetch_archive(name, info["url"], info["sha256"], marker.parent.parent, info.get("subfolder"))
    return f"{marker.name}: repaired ({problem})"


def prefetch_url(
    model: str,
    url: str,
    cache_dir: str,
    sha256: str | None = None,
    subfolder: str | None = None,
    out: str | None = None,
) -> None:
    """The `prefetch_url` rule's step (and `blurbflow prefetch-url`); `out`: the marker the
    rule expects, which must be the one the archive's prefetch writes."""
    sha256, subfolder = sha256 or None, subfolder or None
    marker = archive_marker(cache_dir, url, sha256, subfolder)
    if out is not None and Path(out).resolve() != marker.resolve():
        raise ArchiveError(f"model {model!r}: the rule's output {out} is not its marker {marker}")
    print(json.dumps(prefetch_archive(model, url, sha256, Path(cache_dir), subfolder), indent=2))


def check_markers(markers: list[str]) -> None:
    """The `prefetch` rule's step: every marker's folder checked, and what it lost downloaded
    again (a hub snapshot at its recorded commit, a URL model from its pinned archive)."""
    os.environ["HF_HUB_OFFLINE"] = "0"  # read by huggingface_hub when a repair imports it
    for marker in markers:
        repair = repair_archive if is_archive_marker(marker) else repair_marker
        print(repair(Path(marker)), flush=True)
