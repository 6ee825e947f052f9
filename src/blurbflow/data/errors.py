"""The one error type of the data layer: a raw input that is missing or malformed (docs/)."""

from __future__ import annotations

import os


class DataFormatError(ValueError):
    """Bad raw input. The message names the file (and 1-based line), what is wrong and the fix.

    Build it with `DataFormatError.at(path, line, problem, fix)` so every message reads
    `path:line: problem — fix`; `path` and `line` stay available as attributes for callers.
    """

    def __init__(
        self, message: str, *, path: str | os.PathLike | None = None, line: int | None = None
    ):
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.line = line

    @classmethod
    def at(
        cls, path: str | os.PathLike, line: int | None, problem: str, fix: str
    ) -> DataFormatError:
        where = f"{path}:{line}" if line is not None else str(path)
        return cls(f"{where}: {problem} — {fix}", path=path, line=line)


def redownload(source: str) -> str:
    """The usual fix: the file is not the original one, so fetch the source again."""
    return (
        f"check that this is the original {source!r} file; delete the {source} raw folder "
        "and re-run the download step"
    )


class ManualDownloadMissing(DataFormatError):
    """A source that needs a manual download (BioASQ) is not where the config says it is."""
