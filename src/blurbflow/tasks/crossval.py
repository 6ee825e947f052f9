"""Tasks published as cross-validation partitions (Lee et al. 2019's GAD and EU-ADR folds).

BioBERT's REdata.zip holds `GAD/{1..10}` and its datasets.tar.gz `datasets/RE/euadr/{1..10}`,
each fold a train.tsv and a test.tsv (the REdata.zip the hub serves has no EU-ADR).
`gad` stays BLURB's split (fold 1, dev = the last 535 of its 4796 train lines); `euadr` is
EU-ADR's fold 1 split the same way. Each fold is also a task of its own, `gad-fold{k}` and
`euadr-fold{k}`: the fold's test file, and its train file with the same share held out as dev
(the tune fold selects on it; the other folds train on train+dev). A study's
`cross_validation` runs them (blurbflow.config.study_plan; docs/results.md).
"""

from __future__ import annotations

from dataclasses import replace

from blurbflow.tasks.biolm import BIOBERT_DATASETS
from blurbflow.tasks.builtin import ENTRIES as BUILTIN_ENTRIES
from blurbflow.tasks.spec import TaskSpec

FOLDS = 10
# BLURB's GAD dev share: 535 of fold 1's 4796 train lines, held out from every fold's train file.
DEV_FRACTION = 535 / 4796

EUADR_FOLDER = "datasets/RE/euadr"
# EU-ADR as BioBERT ships it; not in the shared mirror, so no digest.
EUADR = TaskSpec(
    name="euadr", type="re", metric="positive_f1", max_length=128, parser="gad", size=284,
    labels=("0", "1"), negative_label="0", folds=FOLDS,
    options={"folder": EUADR_FOLDER, "dev_fraction": DEV_FRACTION},
    raw=(BIOBERT_DATASETS,),
)  # fmt: skip


def fold_entries(parent: TaskSpec, folds: int = FOLDS) -> list[TaskSpec]:
    """`{parent}-fold1` … `{parent}-fold{folds}`: the parent task on each fold's files."""
    folder = parent.options.get("folder", "GAD")
    return [
        replace(
            parent,
            name=f"{parent.name}-fold{fold}",
            folds=0,
            options={"folder": folder, "fold": fold, "dev_fraction": DEV_FRACTION},
        )
        for fold in range(1, folds + 1)
    ]


_GAD = next(spec for spec in BUILTIN_ENTRIES if spec.name == "gad")
# task with folds -> its fold tasks, in fold order
FOLD_TASKS: dict[str, list[str]] = {}
ENTRIES: list[TaskSpec] = [EUADR]
for _parent in (_GAD, EUADR):
    _folds = fold_entries(_parent, _parent.folds or FOLDS)
    FOLD_TASKS[_parent.name] = [spec.name for spec in _folds]
    ENTRIES += _folds
# fold task -> (task with folds, fold number)
PARENT: dict[str, tuple[str, int]] = {
    fold: (parent, k) for parent, folds in FOLD_TASKS.items() for k, fold in enumerate(folds, 1)
}


def fold_tasks(task: str) -> list[str]:
    """The fold tasks of `task` ([] for a task without published folds)."""
    return list(FOLD_TASKS.get(task, []))
