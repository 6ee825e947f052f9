"""One seed of a job in a process of its own (`python -m blurbflow.train.seed_process`, started
by blurbflow.train.concurrent with its seed on stdin): it sets what the job process set, then
trains the seed as the job process would (blurbflow.train.seed_run), its output to the job's
log and the seed's train.log. Its exit status tells the job how it ended: 0 a result written,
RECORDED_EXIT its failure recorded, PREEMPTED_EXIT its checkpoint saved on SIGTERM."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

from blurbflow.train import Preempted
from blurbflow.train.concurrent import PREEMPTED_EXIT, RECORDED_EXIT
from blurbflow.train.seed_run import seed_log, train_seed
from blurbflow.util.pickles import PackageUnpickler

PR_SET_PDEATHSIG = 1  # prctl(2): a signal for this process when its parent ends


def end_with_parent(parent: int) -> None:
    """SIGTERM to this process when the job's ends (Linux), so no seed trains on unwatched:
    it saves its checkpoint and ends."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the scheduler ends the job's processes
        return
    if os.getppid() != parent:  # it ended before the call
        os.kill(os.getpid(), signal.SIGTERM)


def main() -> int:
    payload = PackageUnpickler(sys.stdin.buffer).load()  # data classes only
    for stream in (sys.stdout, sys.stderr):  # the job's log: lines as they come, as its own
        stream.reconfigure(line_buffering=True)
    end_with_parent(payload["parent"])
    payload["state"].restore()
    work = payload["work"]
    common = {k: payload[k] for k in ("encoded_dir", "data_dir", "threads", "identity", "tracked")}
    with seed_log(work.result_path.parent):
        try:
            status = train_seed(
                work.cell, work.why, result_path=work.result_path, errors=[], **common
            )
        except Preempted as stopped:
            print(stopped, file=sys.stderr, flush=True)  # SIGTERM at epoch …: checkpoint saved
            return PREEMPTED_EXIT
    return RECORDED_EXIT if status == "failed" else 0


if __name__ == "__main__":
    sys.exit(main())
