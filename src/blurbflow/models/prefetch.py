"""Where a job loads a model from, and the prefetch markers that say a hub model is cached.

Hub models are prefetched on a machine with internet (a login node) into the hub cache
(`blurbflow.models.download`); jobs on offline compute nodes load them from there. A prefetch
resolves the model's `revision` (branch, tag or commit) once to a commit and writes a marker
`{cache}/.prefetched/{org}--{name}@{revision}.json` (commit, snapshot, files, bytes): keyed by
what was fetched, never by a config's model name, so projects sharing a cache cannot mistake
another model's marker for theirs. Every job then loads the snapshot of that commit
(`model_folder`), never `main` when a revision is pinned. Nothing here deletes a marker: a marker
whose snapshot lost files is repaired by `snakemake prefetch` (`download.repair_marker`)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

from blurbflow.models.archive import is_url, url_model_folder
from blurbflow.options import ModelOptions

CONFIG_FILE = "config.json"
# Tokenizer files transformers reads from a folder; `.model` are sentencepiece protobufs.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
TOKENIZER_FILES += ("added_tokens.json", "vocab.txt", "vocab.json", "merges.txt")
# A vocabulary a tokenizer can be built from (one of them must be there).
VOCABULARY_FILES = ("tokenizer.json", "vocab.txt", "vocab.json")
FIX = "run `snakemake prefetch` on a machine with internet (a login node), then rerun"
COMMIT = re.compile(r"[0-9a-f]{40}")
# The model entry's keys that change what a cell computes, copied into its options when set
# (absent otherwise, so cells of models that do not set them keep their params).
SETTING_KEYS = ("revision", "cased", "add_prefix_space", "trust_remote_code", "sha256", "subfolder")
# Keys that change only the head a cell builds, not its tokenizer or files: cell options alone.
HEAD_SETTING_KEYS = ("untrained_pooler",)
FLAGS = ("trust_remote_code", "untrained_pooler")  # copied only when true
# The weights, in transformers' order of preference for a local folder: (file, shard pattern).
WEIGHTS = (
    ("model.safetensors", None),
    ("model.safetensors.index.json", re.compile(r"model-\d+-of-\d+\.safetensors")),
    ("pytorch_model.bin", None),
    ("pytorch_model.bin.index.json", re.compile(r"pytorch_model-\d+-of-\d+\.bin")),
)


class ModelNotCached(ValueError):
    """A hub model that the offline cache lacks (or holds only in part)."""

    def __init__(self, name: str, hub_id: str, cache_dir: Path, reason: str):
        self.name, self.hub_id, self.cache_dir = name, hub_id, Path(cache_dir)
        super().__init__(
            f"model {name!r} ({hub_id}) is not completely in the model cache {cache_dir}: "
            f"{reason}. Jobs run offline (HF_HUB_OFFLINE=1) and cannot download it: {FIX}."
        )


def model_settings(name: str, entry: dict, cell: bool = False) -> dict:
    """A config model entry as cell options: `model`, `model_source` (its path, hub id or url)
    and the settings of `SETTING_KEYS` it sets (`FLAGS` only when true); `cell`: also those of
    `HEAD_SETTING_KEYS` (a cell's options, not a tokenizer's)."""
    source = entry.get("path") or entry.get("hub_id") or entry["url"]
    settings = {"model": name, "model_source": source}
    for key in SETTING_KEYS + (HEAD_SETTING_KEYS if cell else ()):
        if entry.get(key) is not None and (key not in FLAGS or entry[key]):
            settings[key] = entry[key]
    return settings


def is_local(model: ModelOptions) -> bool:
    """Whether the model is a local folder (a config `path`) rather than a hub id or url."""
    source = str(model.model_source)
    if is_url(source):
        return False
    hub_like = re.fullmatch(r"[\w.-]+(/[\w.-]+)?", source) and not source.startswith(".")
    return Path(source).is_dir() or (not model.revision and not hub_like)


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


def local_model_problem(path: str) -> str | None:
    """Why the local folder `path` (a config `path:`) holds no model a cell can load, or None:
    missing, or lacking config.json, weights or a tokenizer vocabulary (`select_files`)."""
    where = "(a relative path is read from the workflow folder)"
    fix = (
        "put the model there (save_pretrained, with its tokenizer), correct the path, or use "
        "`hub_id:` instead — `snakemake prefetch` only fetches hub models and `url:` ones"
    )
    folder = Path(path)
    if not folder.is_dir():
        return f"folder {path!r} does not exist {where}; {fix}"
    try:
        select_files(p.name for p in folder.iterdir())
    except ValueError as error:
        return f"folder {path!r} {where} holds no model: {error}; {fix}"
    return None


# ---------------------------------------------------------------- markers
def marker_name(hub_id: str, revision: str | None = None) -> str:
    """The marker's file stem: hub id and revision, as a single safe file name."""
    repo = quote(hub_id.replace("/", "--"), safe="-_.")
    return f"{repo}@{quote(revision or 'main', safe='-_.')}"


def marker_path(cache_dir: str | Path, hub_id: str, revision: str | None = None) -> Path:
    return Path(cache_dir) / ".prefetched" / f"{marker_name(hub_id, revision)}.json"


def read_marker(path: str | Path) -> dict | None:
    try:
        marker = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def snapshot_folder(cache_dir: str | Path, hub_id: str, commit: str) -> Path:
    """A commit's snapshot in the hub cache (derived, not the path recorded at prefetch, so a
    cache moved with the project still works)."""
    return Path(cache_dir) / f"models--{hub_id.replace('/', '--')}" / "snapshots" / commit


def snapshot_problem(marker: dict, cache_dir: str | Path) -> str | None:
    """Why the marker's snapshot cannot be loaded (a file or weight shard missing), or None."""
    try:
        folder = snapshot_folder(cache_dir, marker["hub_id"], marker["commit"])
        files = list(marker["files"])
    except (KeyError, TypeError, AttributeError):
        return "the marker is not a prefetch marker (no hub_id/commit/files)"
    missing = [name for name in files if not (folder / name).is_file()]
    if not missing:
        missing = missing_shards(folder, files)
    return f"{', '.join(missing[:5])} missing from {folder}" if missing else None


def missing_shards(folder: Path, files: list[str]) -> list[str]:
    """Shards named by a sharded weights index that the folder lacks."""
    missing = []
    for index in (f for f in files if f.endswith(".index.json")):
        try:
            weight_map = json.loads((folder / index).read_text()).get("weight_map", {})
        except (OSError, ValueError):
            return [index]
        missing += sorted({s for s in weight_map.values() if not (folder / s).is_file()})
    return missing


# ---------------------------------------------------------------- the cache, offline
def _patterns(files: list[str]) -> list[str]:
    import glob

    # allow_patterns are fnmatch patterns: escape the names so that each matches only itself.
    return [glob.escape(f) for f in files]


def _relative_files(folder: Path) -> list[str]:
    return [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]


def cached_model_dir(name: str, hub_id: str, cache_dir: Path, revision: str | None = None) -> Path:
    """The snapshot folder of `hub_id` at `revision` (a commit, or a branch/tag the cache has a
    ref for) in the hub cache `cache_dir` when it holds everything a cell loads; never touches
    the network. `ModelNotCached` (model `name`, hub id, cache, the fix) otherwise."""
    from huggingface_hub import get_cached_repo_tree, snapshot_download
    from huggingface_hub.errors import (
        CachedRepoTreeNotFoundError,
        IncompleteSnapshotError,
        LocalEntryNotFoundError,
    )

    cache_dir = Path(cache_dir)
    if not snapshot_folder(cache_dir, hub_id, "x").parent.parent.is_dir():  # no huggingface_hub
        reason = f"no snapshot of revision {revision or 'main'!r} was downloaded there"
        raise ModelNotCached(name, hub_id, cache_dir, reason)  # import for a model never fetched
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
        missing = missing_shards(folder, files)
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


def hub_cache() -> Path:
    """The hub cache of this process (HF_HUB_CACHE; the workflow sets it for every job)."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def _snapshot(model: ModelOptions, cache_dir: Path) -> tuple[Path, str]:
    """(snapshot folder, commit) of a hub model: the prefetch marker's commit, or without a
    marker the cache's own ref of the revision (a cache filled by another tool)."""
    name, hub_id, revision = model.model, model.model_source, model.revision or None
    marker = read_marker(marker_path(cache_dir, hub_id, revision))
    if marker is not None:
        problem = snapshot_problem(marker, cache_dir)
        if problem:
            raise ModelNotCached(name, hub_id, cache_dir, problem)
        commit = str(marker["commit"])
        return snapshot_folder(cache_dir, hub_id, commit), commit
    folder = cached_model_dir(name, hub_id, cache_dir, revision)
    return folder, folder.name


def model_folder(model: ModelOptions) -> Path:
    """The local folder a cell (and its tokenizer) loads from: a local model's `path`, or for a
    hub model the snapshot of the commit its revision was resolved to at prefetch, in this
    process's hub cache (a URL model: its unpacked archive there, blurbflow.models.archive).
    `ModelNotCached` names the model and the fix when the cache lacks it;
    FileNotFoundError when a local folder is gone."""
    if is_url(model.model_source):
        sha256, subfolder = model.sha256 or None, model.subfolder or None
        return url_model_folder(model.model, model.model_source, sha256, subfolder, hub_cache())
    if is_local(model):
        folder = Path(model.model_source)
        if not folder.is_dir():
            raise FileNotFoundError(
                f"model {model.model!r}: local folder {folder} does not exist (relative "
                f"paths are read from the workflow's folder); fix models.{model.model}.path "
                "in the config or put the model there"
            )
        return folder.resolve()
    return _snapshot(model, hub_cache())[0]


def model_commit(model: ModelOptions) -> str | None:
    """The hub commit a cell's model was loaded from (None for a local folder or a URL model,
    whose options carry the archive's sha256)."""
    return (
        None if is_local(model) or is_url(model.model_source) else _snapshot(model, hub_cache())[1]
    )


def offline_env(cache_dir: Path) -> dict[str, str]:
    """Environment of a job that loads models from `cache_dir` only (no network at all)."""
    return {"HF_HUB_CACHE": str(Path(cache_dir).resolve()), "HF_HUB_OFFLINE": "1"}


def use_offline_cache(cache_dir: str | Path) -> None:
    """Make every process started from here (the workflow's jobs, local or on SLURM) load hub
    models from `cache_dir` only (compute nodes are offline)."""
    os.environ.update(offline_env(Path(cache_dir)))
