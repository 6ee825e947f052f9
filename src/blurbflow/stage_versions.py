"""Stage versions: one number for each piece of code that writes a derived folder, so that a fix
in blurbflow reaches every result it changes (docs/extending.md "Changing what a stage writes").

- prepare (`resources/data/{task}/`): the common writing code (`PREPARE`), the task's parser
  (`PARSERS`) and the task entry itself (`TaskSpec.version`: its labels, options, splits);
- tokenize (`resources/tokenized/…`): the common encoding code (`ENCODE`), the encoder of the
  task type's input (`ENCODERS`, keyed as blurbflow.tasks.types.INPUTS) and, for a model that
  sets one, how a tokenizer setting is applied (`TOKENIZER_SETTINGS`);
- build_demo_model (`resources/models/{model}/`): `BUILD`; a URL model's unpacking
  (`prefetch_url`): `EXTRACT`.

A commit that changes what a stage writes bumps its number; tests/test_golden_digests.py fails
when a parser's or an encoder's output on fixed inputs changes with its number unchanged. A bump
enters the stage's params (Snakemake's `params` rerun trigger re-runs it and says which number
changed) and the folder's own record (stats.json or meta.json `versions`). The cells after it
re-run only where the bytes they compute from changed: their identity (blurbflow.config.identity) is
content, so a re-prepared folder whose files come out the same keeps every seed.

Every number starts at 1, and the params carry only numbers above 1: a project finished before
stage versions existed has the same params, so updating re-runs nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping

FIRST = 1

PREPARE = 1  # blurbflow.data.prepare and data/parsers/common.py: what every prepared folder holds
PARSERS = {  # the keys of blurbflow.data.parsers.PARSERS
    "bioasq": 1,
    "bioasq-factoid": 1,
    "biosses": 1,
    "chemprot": 1,
    "conll": 1,
    "ddi": 1,
    "ebmpico": 1,
    "gad": 1,
    "hoc": 1,
    "hub": 1,
    "local": 1,
    "pubmedqa": 1,
    "squad": 1,
}
ENCODE = 1  # blurbflow.train.encode's common part: meta.json, labels, lengths, truncation
ENCODERS = {  # the keys of blurbflow.tasks.types.INPUTS (train/encode*.py)
    "entities": 1,
    "pair": 1,
    "question": 1,
    "text": 1,
    "windows": 1,
    "words": 1,
}
# blurbflow.models.tokenizer: how a model setting is applied to its tokenizer; counted only for
# the models that set it. add_prefix_space 2: applied to generic byte-level tokenizers too
# (ModernBERT's tokenizer.json), which ignored it before.
TOKENIZER_SETTINGS = {"add_prefix_space": 2}
BUILD = 1  # blurbflow.models.build: the demo's tokenizer and pre-trained BERT
# blurbflow.model_urls: what a URL model's archive is unpacked into. Not a param: past the first,
# the number is in the archive's marker name (blurbflow.models.archive), a new output path.
EXTRACT = 1


def prepare_versions(spec) -> dict[str, int]:
    """The numbers behind a task's prepared folder (`spec`: a blurbflow.tasks.TaskSpec)."""
    return {
        "prepare": PREPARE,
        f"parser {spec.parser}": PARSERS[spec.parser],
        f"task {spec.name}": spec.version,
    }


def tokenize_versions(spec, settings: Mapping | None = None) -> dict[str, int]:
    """The numbers behind a task's tokenized folders; `settings`: the model's tokenizer settings
    (blurbflow.models.prefetch.model_settings), whose set ones count."""
    versions = {"encode": ENCODE, f"encoder {spec.kind.inputs}": ENCODERS[spec.kind.inputs]}
    for name, number in TOKENIZER_SETTINGS.items():
        if (settings or {}).get(name):
            versions[f"tokenizer {name}"] = number
    return versions


def build_versions() -> dict[str, int]:
    return {"build": BUILD}


def bumped(versions: Mapping[str, int]) -> dict[str, int]:
    """The numbers past the first: what a stage's params carry."""
    return {name: number for name, number in versions.items() if number != FIRST}


def describe(versions: Mapping[str, int]) -> str:
    """'parser chemprot 2, task chemprot 1'."""
    return ", ".join(f"{name} {number}" for name, number in versions.items())


def changes(recorded: Mapping[str, int] | None, current: Mapping[str, int]) -> list[str]:
    """['parser chemprot 1 → 2']: the numbers that differ from a folder's record (a folder
    written before versions were recorded was written at the first ones)."""
    recorded = recorded if isinstance(recorded, Mapping) else {}
    return [
        f"{name} {recorded.get(name, FIRST)} → {number}"
        for name, number in current.items()
        if recorded.get(name, FIRST) != number
    ]


def _recorded(path: str) -> dict | None:
    """A folder's recorded versions; None when its file is missing or unreadable (nothing
    written yet, or damaged: Snakemake and blurbflow.util.artefacts deal with those)."""
    try:
        with open(path, "rb") as handle:
            found = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    return (found.get("versions") or {}) if isinstance(found, dict) else None


def outdated(folders: Iterable[tuple[str, str, Mapping[str, int]]]) -> dict[str, list[str]]:
    """folder -> its version changes, for each (folder, its record file's name, the current
    versions) whose written folder records other numbers."""
    found = {}
    for folder, record, current in folders:
        recorded = _recorded(os.path.join(folder, record))
        if recorded is not None and (changed := changes(recorded, current)):
            found[folder] = changed
    return found
