"""Safe archive extraction: every entry must land inside the target folder (docs/reliability.md).

An entry with an absolute path, a `..` component, a link, or a device file is refused with a
message naming the archive and the entry; a truncated or corrupt archive is reported as such.
"""

from __future__ import annotations

import posixpath
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from blurbflow.data.errors import DataFormatError

REFETCH = "run the step again to download it afresh (a manual download: replace the file)"


def _check_name(archive: Path, name: str) -> None:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise DataFormatError(
            f"{archive}: entry {name!r} has an absolute path — refusing to extract "
            "an archive that writes outside its folder; check where it came from"
        )
    if ".." in path.parts:
        raise DataFormatError(
            f"{archive}: entry {name!r} escapes the target folder with '..' — "
            "refusing to extract; check where the archive came from"
        )


def _extract_zip(archive: Path, target: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            _check_name(archive, info.filename)
            if stat.S_ISLNK(info.external_attr >> 16):
                raise DataFormatError(
                    f"{archive}: entry {info.filename!r} is a symbolic link — "
                    "refusing to extract links; check where the archive came from"
                )
        bad = zf.testzip()
        if bad is not None:
            raise DataFormatError(f"{archive}: entry {bad!r} is corrupt (CRC mismatch) — {REFETCH}")
        zf.extractall(target)


def _extract_tar(archive: Path, target: Path) -> None:
    with tarfile.open(archive) as tf:
        for member in tf:
            _check_name(archive, member.name)
            if member.issym() or member.islnk():
                base = posixpath.dirname(member.name) if member.issym() else ""
                resolved = posixpath.normpath(posixpath.join(base, member.linkname))
                if (
                    posixpath.isabs(member.linkname)
                    or resolved == ".."
                    or resolved.startswith("../")
                ):
                    raise DataFormatError(
                        f"{archive}: entry {member.name!r} links to {member.linkname!r}, outside "
                        "the target folder — refusing to extract; check where the archive came from"
                    )
            elif not (member.isfile() or member.isdir()):
                raise DataFormatError(
                    f"{archive}: entry {member.name!r} is a device or special file — "
                    "refusing to extract"
                )
        # The `data` filter enforces the same rules again at extraction time.
        tf.extractall(target, filter="data")


def extract(archive: Path, target: Path) -> None:
    """Extract a zip or tar(.gz) archive into `target`, refusing unsafe entries."""
    archive, target = Path(archive), Path(target)
    target.mkdir(parents=True, exist_ok=True)
    try:
        if zipfile.is_zipfile(archive):
            _extract_zip(archive, target)
        elif tarfile.is_tarfile(archive):
            _extract_tar(archive, target)
        else:
            raise DataFormatError(
                f"{archive}: not a zip or tar archive (truncated or corrupt?) — {REFETCH}"
            )
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as exc:
        if isinstance(exc, tarfile.FilterError):
            raise DataFormatError(f"{archive}: unsafe entry refused: {exc}") from None
        raise DataFormatError(
            f"{archive}: truncated or corrupt archive ({exc}) — {REFETCH}"
        ) from None
