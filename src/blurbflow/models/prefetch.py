"""Prefetch hub models into a cache folder on a machine with internet (a login node), so that
fine-tuning jobs on offline compute nodes load them from that cache (DESIGN §10).

Only what a cell loads is downloaded: `config.json`, the tokenizer files, and one copy of the
weights in the format transformers picks for a local folder (safetensors when the repo has them,
else PyTorch `.bin`, which `models.load` reads only through torch's weights_only loader). TF,
Flax, ONNX, msgpack and h5 files, training states and READMEs are never fetched."""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

CONFIG_FILE = "config.json"
# Tokenizer files transformers reads from a folder; `.model` are sentencepiece protobufs.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
)
# A vocabulary a tokenizer can be built from (one of them must be there).
VOCABULARY_FILES = ("tokenizer.json", "vocab.txt", "vocab.json")
# The weights, in transformers' order of preference for a local folder: (file, shard pattern).
WEIGHTS = (
    ("model.safetensors", None),
    ("model.safetensors.index.json", re.compile(r"model-\d+-of-\d+\.safetensors")),
    ("pytorch_model.bin", None),
    ("pytorch_model.bin.index.json", re.compile(r"pytorch_model-\d+-of-\d+\.bin")),
)
FIX = "run `snakemake prefetch` on a machine with internet (a login node), then rerun"


class ModelNotCached(ValueError):
    """A hub model that the offline cache lacks (or holds only in part)."""

    def __init__(self, name: str, hub_id: str, cache_dir: Path, reason: str):
        self.name, self.hub_id, self.cache_dir = name, hub_id, Path(cache_dir)
        super().__init__(
            f"model {name!r} ({hub_id}) is not completely in the model cache {cache_dir}: "
            f"{reason}. Jobs run offline (HF_HUB_OFFLINE=1) and cannot download it: {FIX}."
        )


def _is_tokenizer_file(path: str) -> bool:
    return path in TOKENIZER_FILES or ("/" not in path and path.endswith(".model"))


def select_files(repo_files: Iterable[str]) -> list[str]:
    """The files of a repo that a cell needs (sorted): config, tokenizer, one set of weights.
    ValueError when the repo lacks one of them (e.g. a TF/Flax-only repo)."""
    files = set(repo_files)
    problems = []
    if CONFIG_FILE not in files:
        problems.append(f"no {CONFIG_FILE}")
    if not any(f in files for f in VOCABULARY_FILES) and not any(
        "/" not in f and f.endswith(".model") for f in files
    ):
        problems.append(f"no tokenizer vocabulary (one of {', '.join(VOCABULARY_FILES)}, *.model)")
    weights: list[str] = []
    for name, shards in WEIGHTS:
        if name in files:
            weights = [name]
            if shards is not None:
                weights += [f for f in files if shards.fullmatch(f)]
            break
    if not weights:
        problems.append(
            "no PyTorch weights (model.safetensors, pytorch_model.bin or their sharded index)"
        )
    if problems:
        shown = ", ".join(sorted(files)[:20]) + (" ..." if len(files) > 20 else "")
        raise ValueError(f"{'; '.join(problems)} among the repo's files [{shown}]")
    return sorted({CONFIG_FILE, *weights, *(f for f in files if _is_tokenizer_file(f))})


def _patterns(files: list[str]) -> list[str]:
    # allow_patterns are fnmatch patterns: escape the names so that each matches only itself.
    return [glob.escape(f) for f in files]


def _missing_shards(folder: Path, files: list[str]) -> list[str]:
    """Shards named by a sharded index that the folder lacks."""
    missing = []
    for index in (f for f in files if f.endswith(".index.json")):
        weight_map = json.loads((folder / index).read_text()).get("weight_map", {})
        missing += sorted({s for s in weight_map.values() if not (folder / s).is_file()})
    return missing


def prefetch_model(
    hub_id: str,
    cache_dir: Path,
    revision: str | None = None,
    *,
    endpoint: str | None = None,
) -> dict:
    """Download what a cell needs of `hub_id` into the hub cache `cache_dir` (the layout of
    HF_HUB_CACHE); already cached files are not downloaded again. `endpoint` defaults to
    HF_ENDPOINT (read by huggingface_hub at import). Returns a summary: hub_id, revision,
    commit, snapshot folder, files, bytes, weights format."""
    from huggingface_hub import HfApi, get_cached_repo_tree, snapshot_download

    cache_dir = Path(cache_dir)

    def download(files: list[str]) -> Path:
        return Path(
            snapshot_download(
                repo_id=hub_id,
                cache_dir=cache_dir,
                revision=revision,
                allow_patterns=_patterns(files),
                endpoint=endpoint,
            )
        )

    info = HfApi(endpoint=endpoint).model_info(hub_id, revision=revision)
    files = select_files(s.rfilename for s in info.siblings or [])
    folder = download(files)
    if folder.name != info.sha:
        # The branch moved between the listing and the download: choose again from the
        # listing of the commit that was downloaded (cached by snapshot_download).
        listed = get_cached_repo_tree(hub_id, revision=folder.name, cache_dir=cache_dir)
        files = select_files(f.path for f in listed)
        folder = download(files)
    missing = [f for f in files if not (folder / f).is_file()] + _missing_shards(folder, files)
    if missing:
        raise RuntimeError(f"{hub_id}: the download left out {missing} in {folder}")
    return {
        "hub_id": hub_id,
        "revision": revision or "main",
        "commit": folder.name,
        "snapshot": str(folder),
        "files": files,
        "bytes": sum(os.path.getsize(folder / f) for f in files),
        "weights": "safetensors" if any(f.endswith(".safetensors") for f in files) else "bin",
    }


def _relative_files(folder: Path) -> list[str]:
    return [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]


def cached_model_dir(name: str, hub_id: str, cache_dir: Path, revision: str | None = None) -> Path:
    """The snapshot folder of `hub_id` in the hub cache `cache_dir` when it holds everything a
    cell loads (config, tokenizer, all weights); never touches the network. `ModelNotCached`
    (naming the config's model `name`, the hub id, the cache and the fix) otherwise."""
    from huggingface_hub import get_cached_repo_tree, snapshot_download
    from huggingface_hub.errors import (
        CachedRepoTreeNotFoundError,
        IncompleteSnapshotError,
        LocalEntryNotFoundError,
    )

    cache_dir = Path(cache_dir)
    try:
        try:
            listed = [
                f.path for f in get_cached_repo_tree(hub_id, revision=revision, cache_dir=cache_dir)
            ]
        except CachedRepoTreeNotFoundError:
            listed = None  # no listing of the repo cached: judge the snapshot by its own files
        folder = Path(
            snapshot_download(
                repo_id=hub_id,
                cache_dir=cache_dir,
                revision=revision,
                allow_patterns=None if listed is None else _patterns(select_files(listed)),
                local_files_only=True,
            )
        )
        files = select_files(_relative_files(folder))
        missing = _missing_shards(folder, files)
        if missing:
            raise ValueError(f"weight shards missing from {folder}: {missing}")
    except IncompleteSnapshotError as error:
        reason = str(error).split(" Outgoing traffic")[0].rstrip(".")
        raise ModelNotCached(name, hub_id, cache_dir, reason) from error
    except LocalEntryNotFoundError as error:
        reason = f"no snapshot of revision {revision or 'main'!r} was downloaded there"
        raise ModelNotCached(name, hub_id, cache_dir, reason) from error
    except (ValueError, OSError) as error:
        raise ModelNotCached(name, hub_id, cache_dir, str(error).rstrip(".")) from error
    return folder


def offline_env(cache_dir: Path) -> dict[str, str]:
    """Environment of a job that loads models from `cache_dir` only (no network at all)."""
    return {"HF_HUB_CACHE": str(Path(cache_dir).resolve()), "HF_HUB_OFFLINE": "1"}


def local_source(name: str, spec: dict, cache_dir: Path) -> str:
    """The folder a job loads the config's model `name` from: its `path`, or the snapshot of
    its `hub_id` in the cache (`ModelNotCached` when the cache lacks it)."""
    if spec.get("path"):
        return str(spec["path"])
    return str(cached_model_dir(name, spec["hub_id"], cache_dir, spec.get("revision")))


def job_source(name: str, source: str) -> str:
    """Where a job loads a model from: a local folder as it is; a hub id, in a job running
    offline (HF_HUB_OFFLINE=1, as the workflow runs them), from its snapshot in HF_HUB_CACHE —
    `ModelNotCached` names the model and the fix when `snakemake prefetch` did not fetch it."""
    if Path(source).is_dir() or os.environ.get("HF_HUB_OFFLINE", "") not in ("1", "true", "yes"):
        return source
    from huggingface_hub import constants

    return str(cached_model_dir(name, source, Path(constants.HF_HUB_CACHE)))


def use_offline_cache(cache_dir: str | Path) -> None:
    """Make every process started from here (the workflow's jobs, local or on SLURM) load hub
    models from `cache_dir` only (DESIGN §10: compute nodes are offline)."""
    os.environ.update(offline_env(Path(cache_dir)))


def drop_stale_markers(cache_dir: str | Path) -> list[str]:
    """Remove prefetch markers whose snapshot is gone or lacks a file it listed, so that
    Snakemake schedules `prefetch_model` again (the fix `ModelNotCached` advises). Cheap: one
    small JSON per hub model and a stat per file."""
    dropped = []
    for marker in sorted(Path(cache_dir, ".prefetched").glob("*.json")):
        try:
            info = json.loads(marker.read_text())
            snapshot = Path(info["snapshot"])
            complete = all((snapshot / name).is_file() for name in info["files"])
        except (OSError, ValueError, KeyError, TypeError):
            complete = False
        if not complete:
            marker.unlink(missing_ok=True)
            dropped.append(marker.stem)
    return dropped
