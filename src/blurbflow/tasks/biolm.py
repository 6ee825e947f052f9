"""Bio-LM's public tasks beyond BLURB (Lewis et al. 2020): one entry each."""

from __future__ import annotations

from blurbflow.tasks.spec import TaskSpec

ENTRIES: list[TaskSpec] = []
