"""File digests: the sha256 of a file (computed once per process per file version), of a folder,
and of the prepared data's splits. The bottom of the package: imports nothing of blurbflow, so
that every layer (data, models, identity, train, results) can use it."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

# The prepared data's split files (`{split}.parquet`, blurbflow.data.prepare).
SPLITS = ("train", "dev", "test")
_DIGESTS: dict[tuple, str] = {}  # (real path, size, mtime_ns) -> sha256, for this process


def file_sha256(path: str | os.PathLike, fresh: bool = False) -> str:
    """sha256 of a file, computed once per process per (file, size, mtime); `fresh`: read it
    again (a file changed in place with its date put back keeps its size and mtime)."""
    real = os.path.realpath(path)
    stat = os.stat(real)
    key = (real, stat.st_size, stat.st_mtime_ns)
    if fresh or key not in _DIGESTS:
        digest = hashlib.sha256()
        with open(real, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def folder_sha256(folder: str | os.PathLike, names: Iterable[str] | None = None) -> str:
    """One sha256 over the (relative name, content sha256) of every file of `folder` (or of
    `names` in it); links are followed, as hub snapshots are links into the blob store."""
    folder = Path(folder)
    if names is None:
        names = (p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for name in sorted(names):
        digest.update(f"{name}\0{file_sha256(folder / name)}\n".encode())
    return digest.hexdigest()


def data_checksums(data_dir: str | os.PathLike) -> dict[str, str]:
    """sha256 of the prepared train/dev/test parquet files."""
    return {split: file_sha256(Path(data_dir) / f"{split}.parquet") for split in SPLITS}
