"""Upload a study's exported models to the Hugging Face Hub (the config's `publish` section;
docs/models.md): per exported folder `HfApi().create_repo` (private by default; an existing
repository is kept as it is) and `upload_folder` with the folder's files, after checking that
every file is still the one the export wrote (sha256 in index.json).

The token is huggingface_hub's own: the `HF_TOKEN` variable or `hf auth login`. It is never
passed, printed or written here; `results/published/{study}.json` records the repositories and
commits. `dry_run` prints and records what would be uploaded and calls nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

from blurbflow.export.check import publish_settings, repo_id
from blurbflow.export.folder import INDEX
from blurbflow.util.digests import file_sha256
from blurbflow.util.errors import ConfigError
from blurbflow.util.io import write_json_atomic


class PublishError(ValueError):
    """An export that cannot be uploaded as it is (changed since, no token)."""


def planned_uploads(config: dict, study: str, export_dir: str | os.PathLike) -> list[dict]:
    """Per exported folder: repo_id, folder, files, private, commit_message."""
    settings = publish_settings(config)
    if settings is None:
        raise ConfigError("publish: not configured; add `publish: {repo_prefix: your-org/}`")
    index = json.loads((Path(export_dir) / INDEX).read_text())
    every = index["selection"] == "all_seeds"
    uploads = []
    for model in index["models"]:
        folder = Path(model["folder"])
        present = sorted(p.name for p in folder.iterdir() if p.is_file())
        if present != sorted(model["files"]):
            raise PublishError(
                f"{folder}: holds {present}, the export wrote {sorted(model['files'])}; "
                "export again (`snakemake export_models --forcerun export_study`)"
            )
        for name, digest in model["files"].items():
            if file_sha256(folder / name, fresh=True) != digest:
                raise PublishError(
                    f"{folder / name}: changed since the export wrote it; export again "
                    "(`snakemake export_models --forcerun export_study`)"
                )
        fields = {k: model[k] for k in ("study", "model", "task", "recipe")}
        seed = model["seed"]
        uploads.append(
            {
                "repo_id": repo_id(settings, **fields, seed=seed if every else None),
                "folder": str(folder),
                "files": sorted(model["files"]),
                "private": bool(settings["private"]),
                "commit_message": (
                    f"blurbflow study {study}: {model['model']} fine-tuned on {model['task']} "
                    f"(recipe {model['recipe']}, seed {seed})"
                ),
            }
        )
    return uploads


def _hub_api():
    os.environ["HF_HUB_OFFLINE"] = "0"  # jobs run offline (blurbflow.models.prefetch)
    from huggingface_hub import HfApi, get_token

    if get_token() is None:
        raise PublishError(
            "no Hugging Face token: set HF_TOKEN in the environment or run `hf auth login` "
            "where snakemake runs (publish_models is a local rule)"
        )
    return HfApi()


def _upload(api, upload: dict):
    url = api.create_repo(
        upload["repo_id"], private=upload["private"], repo_type="model", exist_ok=True
    )
    commit = api.upload_folder(
        repo_id=upload["repo_id"],
        folder_path=upload["folder"],
        repo_type="model",
        commit_message=upload["commit_message"],
        allow_patterns=upload["files"],
    )
    return url, commit


def publish_study(
    config: dict,
    study: str,
    export_dir: str,
    out: str,
    dry_run: bool | None = None,
    api=None,
) -> dict:
    """Upload (or, with `dry_run`, list) the study's exported folders; the record at `out`.
    `api`: an HfApi-like object (tests); None: huggingface_hub's own, with its token."""
    settings = publish_settings(config) or {}
    dry = bool(settings.get("dry_run")) if dry_run is None else dry_run
    uploads = planned_uploads(config, study, export_dir)
    done = []
    if dry:
        for upload in uploads:
            visibility = "private" if upload["private"] else "public"
            print(f"dry run: would upload {upload['folder']} to {upload['repo_id']} "
                  f"({visibility}): {', '.join(upload['files'])}")  # fmt: skip
    else:
        api = _hub_api() if api is None else api
        for upload in uploads:
            try:
                url, commit = _upload(api, upload)
            except Exception as error:  # the hub's or the network's: name the repository
                uploaded = ", ".join(u["repo_id"] for u in done) or "none"
                raise PublishError(
                    f"{upload['repo_id']}: the upload failed ({type(error).__name__}: {error}); "
                    f"uploaded before it: {uploaded}; run publish_models again"
                ) from error
            done.append(
                {**upload, "url": str(url), "commit": str(getattr(commit, "oid", commit) or "")}
            )
            print(f"uploaded {upload['folder']} to {upload['repo_id']}")
    record = {"study": study, "dry_run": dry, "uploads": done if not dry else uploads}
    write_json_atomic(out, record)
    return record
