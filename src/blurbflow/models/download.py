"""Download what a cell loads of a hub model into the hub cache, on a machine with internet.

Only `config.json`, the tokenizer files and one copy of the weights in the format transformers
picks for a local folder (safetensors when the repo has them, else PyTorch `.bin`, which
`models.load` reads only through torch's weights_only loader): `prefetch.select_files`, which
also judges a cached snapshot offline. TF, Flax, ONNX, msgpack and h5 files, training states
and READMEs are never fetched.

The revision is resolved once, to a commit, and that commit is downloaded. The download runs in
a child process with an overall deadline (a server trickling bytes defeats any read timeout):
past it the child is killed and its partial files removed. `*.incomplete` files that a killed
download left in the cache are removed once untouched for `STALE_INCOMPLETE_S`."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from blurbflow.models.prefetch import (
    _patterns,
    missing_shards,
    read_marker,
    select_files,
    snapshot_problem,
)

DEADLINE_S = float(os.environ.get("BLURBFLOW_HUB_DEADLINE", 4 * 3600))
# A live download writes every few seconds (huggingface_hub's read timeout is 10 s).
STALE_INCOMPLETE_S = 600
PROGRESS_EVERY_S = 10.0


class PrefetchError(ValueError):
    """A hub download that failed or ran past its deadline (nothing partial is kept)."""


def _log(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


def _progress_class(label: str, started: float):
    """A tqdm stand-in for snapshot_download that logs bytes and files every few seconds."""
    from tqdm.auto import tqdm

    state = {"bytes": 0, "files": 0, "last": 0.0}
    lock = threading.Lock()

    class Progress(tqdm):
        def __init__(self, *args, **kwargs):
            self.counts_bytes = kwargs.get("unit") == "B"
            self.is_total = kwargs.get("desc", "").startswith("Reconstruct")
            super().__init__(*args, **{**kwargs, "disable": True})

        def update(self, n=1):
            if not n:
                return
            with lock:
                if self.is_total:
                    state["bytes"] += int(n)
                elif not self.counts_bytes:
                    state["files"] += int(n)
                now = time.monotonic()
                if now - state["last"] >= PROGRESS_EVERY_S:
                    state["last"] = now
                    _log(
                        f"{label}: {state['bytes'] / 1e6:.1f} MB, {state['files']} files done "
                        f"after {now - started:.0f} s"
                    )

    return Progress


def _download(hub_id: str, cache_dir: Path, revision: str | None, endpoint: str | None) -> dict:
    """Resolve `revision` to a commit, select the files from that commit's listing, download
    them (already cached files are not fetched again). Runs in the child process."""
    from huggingface_hub import HfApi, constants, snapshot_download

    constants.HF_HUB_OFFLINE = False  # this is the step that goes online
    started = time.monotonic()
    label = f"{hub_id}@{revision or 'main'}"
    info = HfApi(endpoint=endpoint).model_info(hub_id, revision=revision, files_metadata=True)
    sizes = {s.rfilename: s.size or 0 for s in info.siblings or []}
    files = select_files(sizes)
    _log(
        f"{label}: revision resolved to commit {info.sha}; {len(files)} files, "
        f"{sum(sizes[f] for f in files) / 1e6:.1f} MB: {', '.join(files)}"
    )
    folder = Path(
        snapshot_download(
            repo_id=hub_id,
            cache_dir=cache_dir,
            revision=info.sha,
            allow_patterns=_patterns(files),
            endpoint=endpoint,
            tqdm_class=_progress_class(label, started),
        )
    )
    missing = [f for f in files if not (folder / f).is_file()] + missing_shards(folder, files)
    if missing:
        raise PrefetchError(f"{hub_id}: the download left out {missing} in {folder}")
    if (revision or "main") != info.sha:
        # the ref huggingface_hub itself writes for a named revision (read by other tools)
        refs = folder.parent.parent / "refs" / (revision or "main")
        refs.parent.mkdir(parents=True, exist_ok=True)
        refs.write_text(info.sha)
    size = sum(os.path.getsize(folder / f) for f in files)
    _log(
        f"{label}: {len(files)} files, {size} bytes in {folder} "
        f"({time.monotonic() - started:.1f} s)"
    )
    return {
        "hub_id": hub_id,
        "revision": revision or "main",
        "commit": info.sha,
        "snapshot": str(folder),
        "files": files,
        "bytes": size,
        "weights": "safetensors" if any(f.endswith(".safetensors") for f in files) else "bin",
    }


def _child(conn, *args) -> None:
    try:
        conn.send(("ok", _download(*args)))
    except BaseException as error:  # everything goes back to the parent as a message
        kind = "value" if isinstance(error, ValueError) else "error"
        conn.send((kind, f"{type(error).__name__}: {error}"))
    finally:
        conn.close()


def _incomplete(cache_dir: Path, hub_id: str) -> list[Path]:
    blobs = Path(cache_dir) / f"models--{hub_id.replace('/', '--')}" / "blobs"
    return sorted(blobs.glob("*.incomplete")) if blobs.is_dir() else []


def clean_incomplete(cache_dir: Path, hub_id: str, older_than_s: float = STALE_INCOMPLETE_S):
    """Remove the repo's `*.incomplete` downloads untouched for `older_than_s` (a killed
    download's; huggingface_hub names each uniquely, so none is ever resumed). Their names."""
    removed = []
    for path in _incomplete(cache_dir, hub_id):
        try:
            if time.time() - path.stat().st_mtime >= older_than_s:
                path.unlink()
                removed.append(path.name)
        except FileNotFoundError:
            pass
    return removed


def prefetch_model(
    hub_id: str,
    cache_dir: str | Path,
    revision: str | None = None,
    *,
    endpoint: str | None = None,
    deadline_s: float | None = None,
) -> dict:
    """Download what a cell needs of `hub_id` at `revision` into the hub cache `cache_dir` (the
    layout of HF_HUB_CACHE), within `deadline_s` (default BLURBFLOW_HUB_DEADLINE, 4 h).
    `endpoint` defaults to HF_ENDPOINT. Returns hub_id, revision, commit, snapshot, files,
    bytes, weights. PrefetchError on failure or past the deadline."""
    cache_dir = Path(cache_dir)
    deadline_s = DEADLINE_S if deadline_s is None else deadline_s
    stale = clean_incomplete(cache_dir, hub_id)
    if stale:
        _log(f"{hub_id}: removed {len(stale)} interrupted downloads: {', '.join(stale)}")
    before = set(_incomplete(cache_dir, hub_id))
    # fork: the child inherits this process's settings; huggingface_hub resets its HTTP
    # session in a forked child
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(
        target=_child, args=(send, hub_id, cache_dir, revision, endpoint), daemon=True
    )
    child.start()
    send.close()
    try:
        message = receive.recv() if receive.poll(deadline_s) else None
    except EOFError:  # the child died without a word (killed, out of memory)
        child.join()
        message = ("error", f"the download process died (exit code {child.exitcode})")
    if message is None and child.is_alive():
        child.kill()
    child.join()
    if message is None:
        leftovers = [p for p in _incomplete(cache_dir, hub_id) if p not in before]
        for path in leftovers:
            path.unlink(missing_ok=True)
        raise PrefetchError(
            f"{hub_id}@{revision or 'main'}: the download did not finish within {deadline_s:g} s "
            f"(exit code {child.exitcode}); {len(leftovers)} partial files removed. Check the "
            "connection and run `snakemake prefetch` again (raise BLURBFLOW_HUB_DEADLINE, in "
            "seconds, for a slow link)"
        )
    kind, value = message
    if kind != "ok":
        raise PrefetchError(f"{hub_id}@{revision or 'main'}: {value}")
    return value


def write_marker(summary: dict, marker: Path) -> dict:
    """Write the prefetch marker (atomically); an unchanged marker is left as it is, so a
    repair that fetched nothing new re-runs nothing downstream."""
    from blurbflow.util.io import write_json_atomic

    old = read_marker(marker) or {}
    if {k: v for k, v in old.items() if k != "prefetched_at"} == summary:
        return old
    content = {**summary, "prefetched_at": datetime.now(UTC).isoformat(timespec="seconds")}
    write_json_atomic(marker, content)
    return content


def repair_marker(marker: Path, **kw) -> str:
    """Check a marker's snapshot; download its recorded commit again if files went missing.
    What was done, as one line."""
    info = read_marker(marker)
    if info is None:
        raise PrefetchError(f"{marker}: not a readable prefetch marker; delete it and prefetch")
    problem = snapshot_problem(info, marker.parent.parent)
    if problem is None:
        return f"{marker.name}: complete (commit {info['commit']})"
    _log(f"{marker.name}: {problem}; downloading commit {info['commit']} again")
    summary = prefetch_model(info["hub_id"], marker.parent.parent, info["commit"], **kw)
    write_marker({**summary, "revision": info["revision"]}, marker)
    return f"{marker.name}: repaired ({problem})"
