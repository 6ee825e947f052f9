"""One writer per job folder. A job holds `fcntl.flock` on `{job folder}/job.lock` for its whole
life and writes its owner (host, process, SLURM job id, start) into it. The kernel releases the
lock when the process ends however it ends (SIGKILL included), so a lock file whose lock nobody
holds is stale, whatever owner it names, and is taken over. A second process finding the lock
held (an orphaned job whose snakemake was killed, a job submitted twice) waits up to
`BLURBFLOW_LOCK_WAIT` seconds (default 0) for it, then stops naming the owner: checkpoints and
results are never written by two processes.

flock works across machines on NFSv4 and Lustre (mounted with `flock`); on a file system
without it the lock holds on one machine only."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from blurbflow.train import JobLocked
from blurbflow.util.provenance import where_run

__all__ = ["JobLocked", "job_lock"]

LOCK = "job.lock"
POLL_SECONDS = 1.0


def owner_text(owner: dict | None) -> str:
    if not owner:
        return "an unknown process (its lock file names none)"
    slurm = owner.get("slurm_job_id")
    return (
        f"pid {owner.get('pid')} on {owner.get('host')}"
        + (f", SLURM job {slurm}" if slurm else "")
        + f", since {owner.get('started')}"
    )


def read_owner(handle: int) -> dict | None:
    try:
        text = os.pread(handle, 4096, 0).decode()
        owner = json.loads(text) if text.strip() else None
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) else None


def _try_lock(handle: int) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def wait_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("BLURBFLOW_LOCK_WAIT", "0")))
    except ValueError:
        return 0.0


@contextlib.contextmanager
def job_lock(folder: str | os.PathLike, wait: float | None = None) -> Iterator[dict]:
    """Hold the job folder's lock while the block runs; yields this process's owner record.
    JobLocked, naming the owner, when another live process holds it past `wait` seconds."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK
    handle = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        deadline = time.monotonic() + (wait_seconds() if wait is None else wait)
        announced = False
        while not _try_lock(handle):
            owner = read_owner(handle)
            if time.monotonic() >= deadline:
                raise JobLocked(
                    f"{folder}: this job is being run by {owner_text(owner)} (lock {path}); "
                    "not starting a second writer. Let it finish or stop it, then run again "
                    "(BLURBFLOW_LOCK_WAIT=<seconds> waits for it instead)"
                )
            if not announced:
                print(f"waiting for {owner_text(owner)} to release {path}", flush=True)
                announced = True
            time.sleep(POLL_SECONDS)
        stale = read_owner(handle)
        if stale:
            print(f"{path}: taking over the lock of {owner_text(stale)} (gone)", flush=True)
        owner = {**where_run(), "pid": os.getpid(), "started": datetime.now(UTC).isoformat()}
        os.ftruncate(handle, 0)
        os.pwrite(handle, json.dumps(owner).encode(), 0)
        try:
            yield owner
        finally:
            os.ftruncate(handle, 0)  # still held: a successor never finds our name as stale
    finally:
        os.close(handle)  # releases the lock
