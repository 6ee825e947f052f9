"""The model named on the command line: `snakemake all --configfile config/blurb.yaml --config
model=org/name` scores one model beside the config's own (README "Score your model").

A config asks for it by listing the model `candidate` in a study without defining it under
`models:`; the top-level `model` string (from `--config model=…`) becomes that entry before the
config is validated (workflow/rules/validate.smk):

- an existing folder, or a value starting with `/`, `.` or `~` → `path` (a local model; a
  missing folder then stops validation naming it);
- otherwise a Hugging Face id `org/name`, optionally `org/name@revision` (branch, tag or
  commit) → `hub_id` (+ `revision`), fetched like every hub model (`snakemake prefetch`, or by
  `all` itself on a machine with internet).

Plain Python: no blurbflow import but errors, as it runs while Snakemake reads the workflow.
"""

from __future__ import annotations

import os

from blurbflow.util.errors import ConfigError

CANDIDATE = "candidate"  # the models entry `--config model=…` fills
HOW = (
    "name it on the command line: `--config model=org/name` (a Hugging Face id, optionally "
    "`org/name@revision`) or `--config model=path/to/folder` (a local model saved with "
    "save_pretrained), e.g. `.venv/bin/snakemake all --configfile config/blurb.yaml --config "
    "model=dmis-lab/biobert-base-cased-v1.1` (the target before `--config`, which takes every "
    "word after it)"
)


def wanting_studies(config: dict) -> list[str]:
    """The studies that list the model `candidate`."""
    studies = config.get("studies") if isinstance(config.get("studies"), dict) else {}
    return [
        name
        for name, study in studies.items()
        if isinstance(study, dict) and CANDIDATE in (study.get("models") or [])
    ]


def model_entry(value: str) -> dict:
    """The models entry of a `model` value: `{path}` or `{hub_id[, revision]}`."""
    if os.path.isdir(os.path.expanduser(value)) or value.startswith(("/", ".", "~")):
        return {"path": os.path.expanduser(value)}
    hub_id, at, revision = value.partition("@")
    if at and not revision:
        raise ConfigError(f"model: {value!r} ends with '@'; write `org/name@revision` or drop it")
    return {"hub_id": hub_id, **({"revision": revision} if at else {})}


def apply_model_option(config: dict) -> None:
    """Put the command line's `model` into `models.candidate` (see the module's doc), in place.
    ConfigError when a study lists `candidate` and no model is given, when `model` is given but
    no study lists `candidate`, and when the config defines `candidate` as well."""
    value = config.get("model")
    wanting = wanting_studies(config)
    models = config.get("models")
    defined = isinstance(models, dict) and CANDIDATE in models
    if value is None or (isinstance(value, str) and not value.strip()):
        if wanting and not defined:
            raise ConfigError(
                f"model: study {wanting[0]!r} scores the model you give and none was given; {HOW}"
            )
        return
    if not isinstance(value, str):
        raise ConfigError(f"model: {value!r} is not a model id or folder; {HOW}")
    if not wanting:
        raise ConfigError(
            f"model: {value!r} was given but no study of this config lists the model "
            f"{CANDIDATE!r}; use `--configfile config/blurb.yaml`, or add {CANDIDATE!r} to a "
            "study's models"
        )
    entry = model_entry(value.strip())
    if defined and models[CANDIDATE] != entry:
        raise ConfigError(
            f"models.{CANDIDATE}: the config defines it and `model` names {value!r} as well; "
            f"remove one of the two"
        )
    config["models"] = {CANDIDATE: entry, **(models if isinstance(models, dict) else {})}
