"""Tasks published as cross-validation partitions (Lee et al. 2019's GAD and EU-ADR folds)."""

from __future__ import annotations

from blurbflow.tasks.spec import TaskSpec

ENTRIES: list[TaskSpec] = []
