"""Progress lines in a running cell's log, TTY or not (Snakemake and SLURM redirect the output to
a file, where a progress bar would print nothing): one line at least every `every` seconds and
one at each epoch's end, with epoch, step/total, loss since the last line, learning rate,
samples/s and ETA. The loop hands over loss values it already has on the host, so the lines add
no host-device synchronisation."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import timedelta

EVERY_SECONDS = 120.0


def _duration(seconds: float) -> str:
    return str(timedelta(seconds=round(seconds)))


class Progress:
    def __init__(
        self,
        name: str,
        epochs: int,
        steps_per_epoch: int,
        *,
        done: int = 0,
        every: float = EVERY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        write: Callable[[str], None] | None = None,
    ):
        self.name, self.epochs, self.steps_per_epoch = name, epochs, steps_per_epoch
        self.total = epochs * steps_per_epoch
        self.every, self.clock = every, clock
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.started = self.last = clock()
        self.done_at_start = done  # steps already done when this process began (a resume)
        self.samples = 0
        self.losses: list[float] = []

    def due(self) -> bool:
        return self.clock() - self.last >= self.every

    def update(self, samples: int = 0, losses: list[float] = ()) -> None:
        """Count `samples` trained and step losses brought to the host since the last line."""
        self.samples += samples
        self.losses += list(losses)

    def line(self, epoch: int, step: int, lr: float, extra: str = "") -> str:
        """Write the progress line for (epoch, step done in it) and start a new interval."""
        now = self.clock()
        done = (epoch - 1) * self.steps_per_epoch + step
        elapsed, interval = now - self.started, max(now - self.last, 1e-9)
        ran = done - self.done_at_start
        eta = elapsed / ran * (self.total - done) if ran > 0 else None
        loss = sum(self.losses) / len(self.losses) if self.losses else float("nan")
        text = (
            f"{self.name}: epoch {epoch}/{self.epochs} step {step}/{self.steps_per_epoch} "
            f"({done}/{self.total}) loss {loss:.4f} lr {lr:.3g} "
            f"{self.samples / interval:.1f} samples/s "
            f"elapsed {_duration(elapsed)} ETA {_duration(eta) if eta is not None else '?'}"
        )
        self.write(text + (f" {extra}" if extra else ""))
        self.last, self.samples, self.losses = now, 0, []
        return text
