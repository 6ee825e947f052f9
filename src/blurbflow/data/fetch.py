"""Fetch a raw source into resources/raw/{source}: download (or copy from a mirror), extract,
verify the sha256 of every file the parsers read, and only then move it into place.

A mirror is a base URL or a folder laid out `{host}/{path}` (as ../shared/blurb-raw): each
original URL https://host/path becomes {mirror}/host/path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from blurbflow.data.archives import extract
from blurbflow.data.errors import DataFormatError, ManualDownloadMissing
from blurbflow.tasks.sources import SOURCES, Source
from blurbflow.util.io import UMASK

CHUNK = 1 << 20
TRANSIENT_HTTP = {408, 425, 429, 500, 502, 503, 504}
# Whole-download limit: the socket timeout alone never fires on a server that trickles bytes.
DEADLINE = 3600.0
PROGRESS_EVERY = 30.0  # seconds between progress lines of one download


def resolve_url(url: str, mirror: str | None) -> str:
    """The URL (or local path) to fetch `url` from, given an optional mirror."""
    if not mirror:
        return url
    parts = urlsplit(url)
    return f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}"


def _copy_or_download(location: str, dest: Path, timeout: float, deadline: float) -> None:
    if "://" not in location or location.startswith("file://"):
        source = Path(location.removeprefix("file://"))
        if not source.is_file():
            raise FileNotFoundError(f"{source}: not in the mirror folder")
        shutil.copyfile(source, dest)
        print(f"copied {source} ({dest.stat().st_size:,} bytes)", flush=True)
        return
    request = urllib.request.Request(location, headers={"User-Agent": "blurbflow"})
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=timeout) as response, dest.open("wb") as out:
        expected = response.headers.get("Content-Length")
        print(f"downloading {location} ({expected or 'unknown'} bytes)", flush=True)
        reported = started
        # read1: return what one read brings, so the deadline is checked while bytes trickle.
        while chunk := response.read1(CHUNK):
            out.write(chunk)
            now = time.monotonic()
            if now - reported >= PROGRESS_EVERY:
                reported = now
                done = f"{out.tell():,} of {expected or '?'} bytes"
                print(f"  {done}, {now - started:.0f} s", flush=True)
            if now - started > deadline:
                raise TimeoutError(
                    f"{location}: not complete after {deadline:g} s ({out.tell()} bytes so far)"
                )
    if expected is not None and dest.stat().st_size != int(expected):
        raise ConnectionError(f"{location}: got {dest.stat().st_size} of {expected} bytes")
    took = time.monotonic() - started
    print(f"  done: {dest.stat().st_size:,} bytes in {took:.1f} s", flush=True)


def download(
    location: str,
    dest: Path,
    retries: int = 4,
    backoff: float = 1.0,
    timeout: float = 60,
    deadline: float = DEADLINE,
) -> Path:
    """Fetch into `dest` through a `.part` file renamed only when complete; transient failures
    are retried with exponential backoff, a 404 or a missing mirror file fails at once. Each
    try ends after `deadline` seconds however slowly the server sends."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    for attempt in range(retries + 1):
        try:
            _copy_or_download(location, part, timeout, deadline)
            os.replace(part, dest)
            return dest
        except urllib.error.HTTPError as exc:
            if exc.code not in TRANSIENT_HTTP or attempt == retries:
                raise DataFormatError(
                    f"{location}: HTTP {exc.code} {exc.reason} — check the URL or "
                    "the `mirror` setting"
                ) from None
        except FileNotFoundError as exc:
            raise DataFormatError(f"{exc} — check the `mirror` setting") from None
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
            if attempt == retries:
                raise DataFormatError(
                    f"{location}: download failed after {retries + 1} tries ({exc}) "
                    "— check the network or use a `mirror`"
                ) from None
        finally:
            part.unlink(missing_ok=True)
        time.sleep(backoff * 2**attempt)
    raise AssertionError("unreachable")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def tree_digest(root: Path, pattern: str) -> tuple[str, int]:
    """sha256 over the sorted (relative path, file sha256) lines of the files matching pattern."""
    files = sorted(p for p in Path(root).glob(pattern) if p.is_file())
    lines = "".join(f"{p.relative_to(root).as_posix()}  {sha256_file(p)}\n" for p in files)
    return hashlib.sha256(lines.encode()).hexdigest(), len(files)


def verify(source: Source, root: Path) -> dict[str, str]:
    """Check every pinned digest; returns pattern -> observed digest."""
    observed = {}
    for pattern, expected in source.checksums.items():
        digest, count = tree_digest(root, pattern)
        if count == 0:
            raise DataFormatError(
                f"{root}/{pattern}: no such file after fetching source {source.name!r} "
                "— the download is not the expected one; nothing was kept: fetch again"
            )
        if digest != expected:
            raise DataFormatError(
                f"{root}/{pattern}: sha256 {digest} does not match the registry's {expected} — the "
                "files differ from the ones BLURB uses (corrupt or changed upstream); nothing was "
                "kept: fetch again, or check the mirror"
            )
        observed[pattern] = digest
    return observed


def _manual(source: Source, manual_dir: Path | None, work: Path) -> None:
    folder = Path(manual_dir or f"resources/manual/{source.name}")
    for name in source.manual_files:
        found = [folder / name, folder / Path(name).with_suffix("")]
        if found[0].is_file():
            extract(found[0], work)
        elif found[1].is_dir():
            shutil.copytree(found[1], work / found[1].name, dirs_exist_ok=True)
        else:
            raise ManualDownloadMissing(
                f"{found[0]}: missing manual download for {source.name}. {source.manual}; put "
                f"{name} (or its extracted folder) into {folder}/ (the `data.bioasq_dir` setting), "
                "then run the workflow again"
            )


def remove_leftovers(out_dir: Path) -> list[Path]:
    """Temporary folders (with their `.part` files) of earlier fetches of `out_dir` that were
    killed before cleaning up. Snakemake's lock lets one fetch of a source run at a time, so
    any that exist now are dead."""
    stale = sorted(Path(out_dir).parent.glob(f".{Path(out_dir).name}.*"))
    for folder in stale:
        print(f"removing {folder}: left by an interrupted fetch")
        shutil.rmtree(folder, ignore_errors=True)
    return stale


def fetch_source(
    name: str,
    out_dir: Path,
    mirror: str | None = None,
    manual_dir: Path | None = None,
    verify_checksums: bool = True,
) -> dict:
    """Build resources/raw/{name} in a temporary folder and rename it into place when complete."""
    source = SOURCES[name]
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(out_dir)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    locations = [resolve_url(url, mirror) for url in source.urls]
    try:
        if source.manual:
            _manual(source, manual_dir, work)
        downloads = work / ".downloads"
        for url, location in zip(source.urls, locations, strict=True):
            file = download(location, downloads / Path(urlsplit(url).path).name)
            if source.archive:
                extract(file, work)
            else:
                shutil.move(file, work / file.name)
        shutil.rmtree(downloads, ignore_errors=True)
        for pattern in source.nested:
            for inner in sorted(work.glob(pattern)):
                extract(inner, inner.parent)
        observed = verify(source, work) if verify_checksums else {}
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.chmod(work, 0o777 & ~UMASK)  # mkdtemp makes 0700; others on the cluster read it too
        os.replace(work, out_dir)
    except DataFormatError as error:
        if isinstance(error, ManualDownloadMissing) or not locations:
            raise
        # The temporary folder is gone when the message is read: name the target and the URLs.
        where = str(error).replace(f"{work}/.downloads/", "").replace(str(work), str(out_dir))
        raise DataFormatError(f"{where} [from {', '.join(locations)}]") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"source": name, "verified": observed}
