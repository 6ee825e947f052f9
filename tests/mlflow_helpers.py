"""A real `mlflow server` on 127.0.0.1 with a SQLite store, for the tracking tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

MLFLOW = Path(sys.executable).parent / "mlflow"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def mlflow_server(folder: Path):
    """`mlflow server` storing under `folder`; yields its URI, stops it (and its workers) after."""
    port = free_port()
    log_path = folder / "mlflow-server.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [
                str(MLFLOW),
                "server",
                "--backend-store-uri",
                f"sqlite:///{folder / 'mlflow.db'}",
                "--artifacts-destination",
                str(folder / "mlflow-artifacts"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                "1",
            ],
            cwd=folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its workers with it: stopped as one group below
        )
        try:
            uri = f"http://127.0.0.1:{port}"
            _wait_until_healthy(server, uri, log_path)
            yield uri
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()


def _wait_until_healthy(server: subprocess.Popen, uri: str, log_path: Path) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"mlflow server did not start: {log_path.read_text()}")
        time.sleep(0.5)
