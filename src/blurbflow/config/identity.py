"""A cell's identity: what it computed from, by content, never by path. Options name the model
and its folder; the identity adds the model folder's content hash (and a hub snapshot's
commit), the tokenized inputs' digest and the prepared data's checksums, so a rebuilt model or
re-prepared data retrains the cell while moving the project folder retrains nothing.

Also the records of a job's manifest (`seeds.json`): each seed file's sha256, size and mtime,
and the cheap stat-only check the workflow runs when it is read (`stale_manifests`)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from blurbflow.models.prefetch import model_folder
from blurbflow.options import CellOptions
from blurbflow.util.artefacts import RECORD, verify
from blurbflow.util.digests import data_checksums, file_sha256, folder_sha256  # noqa: F401

SPLITS = ("train", "dev", "test")
SEED_FILES = ("result.json", "predictions.parquet")
_SEED_SET = frozenset(SEED_FILES)


def model_identity(options: CellOptions) -> dict:
    """The model's content: sha256 of the files of the folder the cell loads from
    (blurbflow.models.prefetch.model_folder); for a hub snapshot also its commit."""
    return folder_identity(model_folder(options.model_options))


def folder_identity(folder: str | os.PathLike) -> dict:
    """A model folder's identity (`model_identity`)."""
    folder = Path(folder)
    commit = folder.name if folder.parent.name == "snapshots" else None
    # a built model's record (blurbflow.util.artefacts) is about its files, not part of them
    names = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    names = [name for name in names if name != RECORD]
    return {"commit": commit, "sha256": folder_sha256(folder, names)}


def tokenized_identity(encoded_dir: str | os.PathLike) -> str:
    """Digest of the token ids (split files) and of meta.json without the tokenizer's path."""
    encoded_dir = Path(encoded_dir)
    digest = hashlib.sha256(folder_sha256(encoded_dir, [f"{s}.parquet" for s in SPLITS]).encode())
    meta_path = encoded_dir / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        meta.pop("tokenizer", None)  # a path (absolute for hub snapshots): not content
        meta.pop("versions", None)  # the code's numbers: a bump with the same bytes keeps cells
        digest.update(json.dumps(meta, sort_keys=True).encode())
    return digest.hexdigest()


def check_inputs(encoded_dir: str | os.PathLike, data_dir: str | os.PathLike) -> None:
    """A job's input folders must hold what it reads (FileNotFoundError naming the fix)."""
    for folder, what, fix in (
        (encoded_dir, "tokenized inputs", "run the `tokenize` step (snakemake does)"),
        (data_dir, "prepared data", "run `snakemake data`"),
    ):
        missing = [f"{s}.parquet" for s in SPLITS if not (Path(folder) / f"{s}.parquet").is_file()]
        if missing:
            raise FileNotFoundError(f"{folder}: no {what} ({', '.join(missing)} missing); {fix}")


def verify_inputs(options: CellOptions, encoded_dir, data_dir) -> None:
    """Every recorded input folder is what its producer wrote (blurbflow.util.artefacts: every
    sha256, which the identity computes anyway): else DamagedArtefact naming the file and the
    rule that rebuilds it, before any seed reads it."""
    verify(data_dir, "prepared data")
    verify(encoded_dir, "tokenized inputs")
    verify(model_folder(options.model_options), f"model {options.model}")


def cell_identity(options: CellOptions, encoded_dir, data_dir) -> dict:
    """Everything besides the options that a cell's result depends on (no paths); its input
    folders verified first."""
    check_inputs(encoded_dir, data_dir)
    verify_inputs(options, encoded_dir, data_dir)
    return {
        "model": model_identity(options),
        "tokenized": tokenized_identity(encoded_dir),
        "data": data_checksums(data_dir),
    }


def identity_difference(old: dict | None, new: dict) -> str | None:
    """Which parts of two identities differ, for the job log; None when they are the same."""
    if old == new:
        return None
    if not isinstance(old, dict):
        return "no identity recorded (written before identities were)"
    names = (
        "model",
        "tokenized",
        "data",
        "init_weights",
    )  # init_weights: blurbflow.config.init_from
    parts = [name for name in names if old.get(name) != new.get(name)]
    return "differs in " + ", ".join(parts or ["its keys"]) + " content"


# -- the job manifest: per-seed file records, and the workflow's cheap check ---------------------


def file_record(path: str | os.PathLike) -> dict:
    stat = os.stat(path)
    return {"sha256": file_sha256(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def seed_records(
    job_dir: str | os.PathLike, seeds: Iterable[int], names: Iterable[str] = SEED_FILES
) -> dict[str, dict]:
    """seed -> {file name -> record} for the manifest (`names`: SEED_FILES, and weights.pt for a
    job whose cells keep their weights)."""
    return {
        str(seed): {name: file_record(Path(job_dir, f"seed{seed}", name)) for name in names}
        for seed in seeds
    }


def record_matches(path: str | os.PathLike, record: dict) -> bool:
    """Whether a file still is the one recorded: same size and mtime, or (mtime changed by a
    copy) the same sha256."""
    try:
        stat = os.stat(path)
    except OSError:
        return False
    if stat.st_size != record.get("size"):
        return False
    if stat.st_mtime_ns == record.get("mtime_ns"):
        return True
    return file_sha256(path) == record.get("sha256")


def stale_manifests(manifests: Iterable[str], missing: list | None = None) -> list[str]:
    """Manifests (existing ones) whose seed files no longer match their records: stat only,
    unless a file's mtime changed with its size (then it is hashed). Nothing is deleted.
    Manifests that do not exist are appended to `missing` when given. Tight on purpose: the
    workflow runs it on every manifest each time it is read."""
    stale = []
    stat = os.stat
    for manifest in manifests:
        try:
            with open(manifest, "rb") as handle:
                files = json.loads(handle.read()).get("files")
            prefix = manifest[: -len(os.path.basename(manifest))]
            for seed, records in files.items():
                if not records.keys() >= _SEED_SET:  # these always; weights.pt when recorded
                    raise KeyError(seed)
                for name, record in records.items():
                    path = f"{prefix}seed{seed}/{name}"
                    info = stat(path)
                    if (info.st_size, info.st_mtime_ns) != (record["size"], record["mtime_ns"]):
                        if not record_matches(path, record):
                            raise ValueError(path)
        except FileNotFoundError as error:
            if error.filename != manifest:
                stale.append(manifest)  # a seed file is gone
            elif missing is not None:
                missing.append(manifest)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            stale.append(manifest)  # changed, unreadable or written before files were recorded
    return stale
