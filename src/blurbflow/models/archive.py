"""Models given by URL: a tar.gz or zip archive of a Hugging Face model folder, pinned by the
archive's sha256 (Bio-LM's released checkpoints are such tarballs, not hub repositories).

`blurbflow.model_urls` downloads, verifies and unpacks one on a machine with internet; this
module only says where the result lives, so that jobs find it offline:

- the model folder `{cache}/url-models/{sha256}` (with `--{subfolder digest}` when the entry
  names a `subfolder`), holding the config, tokenizer and weights files of the archive's model
  folder and nothing else;
- the marker `{cache}/.prefetched/url--{same name}.json` (url, sha256, the folder inside the
  archive, files, bytes). An entry without a pin has a marker name of its own that no prefetch
  ever writes (`url--unpinned-…`): `prefetch` refuses to use an unpinned archive.

Names come from the content (sha256) and the subfolder, never from a config's model name, so
projects sharing a cache share an unpacked archive. Plain Python: the workflow reads this while
it plans."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from blurbflow.stage_versions import EXTRACT, FIRST

SCHEMES = ("http://", "https://", "file://")
FOLDER = "url-models"
PREFIX = "url--"
FIX = "run `snakemake prefetch` on a machine with internet (a login node), then rerun"


class ArchiveNotCached(ValueError):
    """A URL model that the offline cache lacks (never prefetched, unpinned, or damaged)."""

    def __init__(self, name: str, url: str, cache_dir: Path, reason: str):
        self.name, self.url = name, url
        super().__init__(
            f"model {name!r} ({url}) is not completely in the model cache {cache_dir}: "
            f"{reason}. Jobs run offline and cannot download it: {FIX}."
        )


def is_url(source: object) -> bool:
    """Whether a model source (a config's path, hub id or url) is a URL."""
    return str(source).startswith(SCHEMES)


def _digest(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def archive_name(url: str, sha256: str | None, subfolder: str | None = None) -> str:
    """The folder's and marker's name: the pinned sha256 (`unpinned-{url digest}` without
    one), plus a digest of the subfolder when the entry names one."""
    name = sha256 or f"unpinned-{_digest(url, 16)}"
    return f"{name}--{_digest(subfolder, 12)}" if subfolder else name


def archive_marker(
    cache_dir: str | Path, url: str, sha256: str | None, subfolder: str | None = None
) -> Path:
    """The marker's path; past the first extraction version (blurbflow.stage_versions
    `EXTRACT`) its name carries the number, so a bump unpacks every archive again."""
    name = archive_name(url, sha256, subfolder)
    if EXTRACT > FIRST:
        name += f"--extract{EXTRACT}"
    return Path(cache_dir) / ".prefetched" / f"{PREFIX}{name}.json"


def archive_folder(cache_dir: str | Path, sha256: str, subfolder: str | None = None) -> Path:
    return Path(cache_dir) / FOLDER / archive_name("", sha256, subfolder)


def is_archive_marker(path: str | Path) -> bool:
    return Path(path).name.startswith(PREFIX)


def folder_problem(marker: dict, folder: Path) -> str | None:
    """Why the unpacked folder cannot be loaded (a file the marker lists is gone), or None."""
    try:
        files = list(marker["files"])
    except (KeyError, TypeError):
        return "the marker is not a URL model's marker (no files)"
    missing = [name for name in files if not (folder / name).is_file()]
    return f"{', '.join(missing[:5])} missing from {folder}" if missing else None


def read_json(path: Path) -> dict | None:
    try:
        value = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def url_model_folder(
    name: str, url: str, sha256: str | None, subfolder: str | None, cache_dir: Path
) -> Path:
    """The unpacked model folder of a URL model in `cache_dir`, once prefetch verified and
    unpacked it; `ArchiveNotCached` (model, url, cache, the fix) otherwise."""
    if not sha256:
        raise ArchiveNotCached(
            name, url, cache_dir, f"models.{name}.sha256 is not set, so nothing was unpacked"
        )
    marker = read_json(archive_marker(cache_dir, url, sha256, subfolder))
    folder = archive_folder(cache_dir, sha256, subfolder)
    if marker is None:
        raise ArchiveNotCached(name, url, cache_dir, f"no prefetch marker for sha256 {sha256}")
    problem = folder_problem(marker, folder)
    if problem:
        raise ArchiveNotCached(name, url, cache_dir, problem)
    return folder
