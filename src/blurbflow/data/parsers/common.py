"""Reading helpers shared by the parsers: every failure becomes a DataFormatError that names the
file (and line) and says how to fix it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError, redownload
from blurbflow.tasks.types import TYPES

SPLITS = ("train", "dev", "test")

# The prepared columns per task type (blurbflow.tasks.types); every frame starts with id, split.
COLUMNS: dict[str, tuple[str, ...]] = {name: kind.columns for name, kind in TYPES.items()}


def read_text(path: Path, source: str) -> str:
    """The file's text (UTF-8, BOM dropped); a missing or undecodable file is a DataFormatError."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataFormatError.at(
            path,
            None,
            "file not found",
            f"download the {source!r} source first (the data step fetches and extracts it into "
            f"{path.parent})",
        ) from None
    except IsADirectoryError:
        raise DataFormatError.at(
            path, None, "is a directory, expected a file", redownload(source)
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DataFormatError.at(
            path, line, f"not UTF-8 text ({err.reason})", redownload(source)
        ) from None
    return text.removeprefix("\ufeff")


def iter_lines(path: Path, source: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its end) for each line.

    Splits on newlines only: str.splitlines would also split on Unicode separators that can occur
    inside real sentences and would shift every line number after them.
    """
    lines = read_text(path, source).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        yield number, line.removesuffix("\r")


def tab_fields(path: Path, number: int, line: str, columns: tuple[str, ...], fix: str) -> list[str]:
    """The line's tab-separated fields; any other count than `columns` (their names, for the
    message) is a DataFormatError that says how to `fix` it."""
    fields = line.split("\t")
    if len(fields) != len(columns):
        raise DataFormatError.at(
            path,
            number,
            f"expected {len(columns)} tab-separated columns ({', '.join(columns)}), "
            f"found {len(fields)}",
            fix,
        )
    return fields


def read_json(path: Path, source: str):
    text = read_text(path, source)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFormatError.at(
            path, err.lineno, f"invalid JSON ({err.msg}, column {err.colno})", redownload(source)
        ) from None


def read_index_list(path: Path, valid: Callable[[str], bool], what: str) -> list[str]:
    """A comma-separated list of BLURB's split index (data_generation/indexing/...), each entry
    checked with `valid`; `what` names a valid entry in the error."""
    entries = [e.strip() for e in read_text(path, "blurb-index").split(",") if e.strip()]
    for entry in entries:
        if not valid(entry):
            raise DataFormatError.at(
                path, None, f"entry {entry!r} is not {what}", redownload("blurb-index")
            )
    return entries


def line_of(text: str, needle: str) -> int | None:
    """1-based line where `needle` first occurs in `text` (to point at a bad JSON record)."""
    offset = text.find(needle)
    return None if offset < 0 else text.count("\n", 0, offset) + 1


def embedded_split(name: str) -> str:
    """Text of a split file shipped in the package (`blurbflow/tasks/splits/{name}`)."""
    return resources.files("blurbflow.tasks").joinpath("splits", name).read_text(encoding="utf-8")


def pubmedqa_fold0_dev_pmids() -> list[str]:
    return embedded_split("pubmedqa_pqal_fold0_dev_pmids.txt").split()


def biosses_split_ids() -> dict[str, list[int]]:
    raw = json.loads(embedded_split("biosses_split_ids.json"))
    return {"train": raw["TRAIN_INDEXES"], "dev": raw["DEV_INDEXES"], "test": raw["TEST_INDEXES"]}


def make_frame(task_type: str, split: str, rows: list[dict]) -> pd.DataFrame:
    """A split's frame in the uniform column order; `rows` hold every column but `split`."""
    columns = COLUMNS[task_type]
    frame = pd.DataFrame([{**row, "split": split} for row in rows], columns=list(columns))
    if not rows:  # empty splits still carry string ids
        frame["id"] = frame["id"].astype(str)
    return frame
