"""Extractive question answering (SQuAD v1.1/v2.0 format): one entry each."""

from __future__ import annotations

from blurbflow.tasks.spec import TaskSpec

ENTRIES: list[TaskSpec] = []
