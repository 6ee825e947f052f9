"""Atomic file output: every artefact is written to a temporary sibling and renamed (docs/),
so a killed job never leaves a half-written file that a later step could read."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

UMASK = os.umask(0)
os.umask(UMASK)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~UMASK)  # mkstemp makes 0600; give the usual mode
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(path: str | os.PathLike, obj) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def write_parquet_atomic(path: str | os.PathLike, frame) -> None:
    """Write a pandas DataFrame as parquet (pyarrow) atomically."""
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False, engine="pyarrow")
