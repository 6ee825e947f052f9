"""Users' own tasks from the config's `tasks:` section: an entry with a `type` is a task of its
own, read from local files (`format: conll | tsv | jsonl`, or `squad` JSON for extractive QA;
`files: {train, dev, test}`) or from a Hugging Face dataset (`format: hf`,
`dataset: {path, revision, splits}`); docs/data.md "Your own tasks".
An entry without `type` only overrides a built-in task (`max_length`).
"""

from __future__ import annotations

import difflib
from pathlib import Path

from blurbflow.tasks.builtin import NER_LABELS
from blurbflow.tasks.spec import TaskSpec
from blurbflow.tasks.types import TYPES
from blurbflow.util.errors import ConfigError

SPLITS = ("train", "dev", "test")
FORMATS = ("conll", "tsv", "jsonl", "squad", "hf")
KEYS = {
    "type", "format", "files", "dataset", "columns", "labels", "metric", "max_length",
    "negative_label", "size", "seeds", "description",
}  # fmt: skip
DATASET_KEYS = {"path", "name", "revision", "splits"}


def _fail(where: str, message: str) -> None:
    raise ConfigError(f"{where}: {message}")


def _check_files(name: str, entry: dict) -> None:
    files = entry.get("files")
    where = f"tasks.{name}.files"
    if not isinstance(files, dict) or set(files) != set(SPLITS):
        _fail(where, "give the three files as `{train: PATH, dev: PATH, test: PATH}`")
    for split in SPLITS:
        if not isinstance(files[split], str) or not files[split]:
            _fail(f"{where}.{split}", f"{files[split]!r} is not a file path")


def _check_dataset(name: str, entry: dict) -> None:
    dataset, where = entry.get("dataset"), f"tasks.{name}.dataset"
    if not isinstance(dataset, dict):
        _fail(
            where, "give `{path: org/name, revision: COMMIT, splits: {train: …, dev: …, test: …}}`"
        )
    if unknown := set(dataset) - DATASET_KEYS:
        _fail(
            where,
            f"unknown key(s) {', '.join(sorted(unknown))}; use {', '.join(sorted(DATASET_KEYS))}",
        )
    for key in ("path", "revision"):
        if not isinstance(dataset.get(key), str) or not dataset[key]:
            _fail(f"{where}.{key}", "missing: a dataset is read at a pinned revision (a commit)")
    splits = dataset.get("splits")
    if not isinstance(splits, dict) or set(splits) != set(SPLITS):
        _fail(f"{where}.splits", "map train, dev and test to the dataset's split names")


def custom_task(name: str, entry: dict) -> TaskSpec:
    """The TaskSpec of one `tasks:` entry with a `type`."""
    where = f"tasks.{name}"
    if unknown := set(entry) - KEYS:
        _fail(
            where,
            f"unknown key(s) {', '.join(sorted(unknown))}; a task of your own takes "
            f"{', '.join(sorted(KEYS))}",
        )
    kind = TYPES.get(entry["type"])
    if kind is None:
        _fail(
            f"{where}.type", f"{entry['type']!r} is not a task type; use one of {', '.join(TYPES)}"
        )
    fmt = entry.get("format")
    if fmt not in FORMATS:
        _fail(f"{where}.format", f"{fmt!r} is not a format; use one of {', '.join(FORMATS)}")
    fits = _formats(kind.name, kind.inputs)
    if fmt not in fits:
        _fail(f"{where}.format", f"{fmt} does not hold {kind.name} data; use {' or '.join(fits)}")
    if fmt == "hf":
        _check_dataset(name, entry)
    else:
        _check_files(name, entry)
    labels = entry.get("labels")
    if labels is None and kind.name == "ner":
        labels = NER_LABELS  # untyped B/I/O, as BLURB's NER tasks
    unlabelled = kind.target in ("score", "span")  # a regression score, an answer span
    if not unlabelled and (not isinstance(labels, list | tuple) or len(labels) < 2):
        _fail(f"{where}.labels", f"a {kind.name} task needs its label list (at least 2 labels)")
    metric = entry.get("metric", kind.metrics[0])
    if metric not in kind.metrics:
        _fail(
            f"{where}.metric",
            f"{metric!r} does not apply to {kind.name}; use one of {', '.join(kind.metrics)}",
        )
    negative = entry.get("negative_label")
    if metric == "positive_f1" and (negative is None or len(labels or ()) != 2):
        _fail(f"{where}.negative_label", "positive_f1 needs 2 labels and the negative one named")
    if negative is not None and str(negative) not in [str(x) for x in labels or ()]:
        _fail(f"{where}.negative_label", f"{negative!r} is not one of the labels")
    columns = entry.get("columns") or {}
    if not isinstance(columns, dict) or not set(columns) <= set(kind.columns):
        _fail(
            f"{where}.columns",
            f"map the prepared columns ({', '.join(kind.columns[2:])}) to the names in your files",
        )
    return TaskSpec(
        name=name,
        type=kind.name,
        labels=tuple(str(label) for label in labels or ()),
        metric=metric,
        max_length=int(entry.get("max_length", 512)),
        parser="hub" if fmt == "hf" else "local",
        size=entry.get("size"),
        negative_label=None if negative is None else str(negative),
        seeds=int(entry.get("seeds", 5)),
        data={k: entry[k] for k in ("format", "files", "dataset", "columns") if k in entry},
        builtin=False,
    )


def _formats(type_name: str, inputs: str) -> tuple[str, ...]:
    """The formats that hold a task type's data: answer spans only SQuAD JSON, words (NER,
    PICO) CoNLL, the rest TSV; JSON Lines and the hub all but spans."""
    if type_name == "span":
        return ("squad",)
    return ("conll" if inputs == "words" else "tsv", "jsonl", "hf")


def custom_tasks(section) -> dict[str, TaskSpec]:
    """name -> TaskSpec of every entry of a `tasks:` section that has a `type`."""
    if not isinstance(section, dict):
        return {}
    return {
        name: custom_task(name, entry)
        for name, entry in section.items()
        if isinstance(entry, dict) and "type" in entry
    }


def check_section(section, builtin, files: bool = False) -> None:
    """Every entry of a `tasks:` section: a task of one's own (with `type`, not a built-in
    name), else an override of a built-in task; with `files`, local files must exist."""
    section = section if isinstance(section, dict) else {}
    known = [*builtin, *(n for n, e in section.items() if isinstance(e, dict) and "type" in e)]
    for name, entry in section.items():
        if not isinstance(entry, dict) or "type" not in entry:
            if name not in builtin:
                close = difflib.get_close_matches(str(name), known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                _fail(
                    f"tasks.{name}",
                    f"unknown task {name!r}{hint}: a task of your own needs "
                    "a `type` (docs/data.md 'Your own tasks'); built-in tasks take only max_length",
                )
            continue
        if name in builtin:
            _fail(
                f"tasks.{name}.type",
                f"{name!r} is a built-in task; give your own task another name",
            )
        spec = custom_task(name, entry)
        for split, path in (spec.data.get("files") or {}).items():
            if files and not Path(path).is_file():
                _fail(
                    f"tasks.{name}.files.{split}",
                    f"file {path!r} does not exist (a relative "
                    "path is read from the workflow folder)",
                )


def local_files(spec: TaskSpec) -> list[str]:
    """The files a local task is prepared from (the prepare rule's inputs)."""
    files = spec.data.get("files") or {}
    return [files[split] for split in SPLITS if split in files]
