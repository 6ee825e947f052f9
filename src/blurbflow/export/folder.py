"""Export a study's models: per table entry the chosen seed's kept folder (blurbflow.train.kept),
verified, into `results/models/{study}/{model}/{task}/{recipe}/` (`…/seed{N}/` when every seed
is exported) with the entry's model card, and `index.json` listing what was exported.

Nothing is trusted blindly: the seed's result.json must be the file its job recorded (sha256 in
the job's `seeds.json`), and the kept weights the file the seed saved (`model_sha256` in that
result.json); a mismatch or a missing folder stops the export naming the cell and the fix.
Weights are hard links where the file system allows (no second copy of a large model), else
copies; the small files are copied and the card is written fresh."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pandas as pd

from blurbflow import published as papers
from blurbflow.export.card import entry_card
from blurbflow.export.check import export_plan
from blurbflow.export.choose import TIE_RULE, Entry, metric_names, study_entries
from blurbflow.util.digests import file_sha256
from blurbflow.util.errors import ConfigError
from blurbflow.util.io import write_json_atomic, write_text_atomic
from blurbflow.util.provenance import package_version

MODEL_DIR, WEIGHTS, CARD = "model", "model.safetensors", "README.md"  # blurbflow.train.kept's
ADAPTER = "adapter_model.safetensors"  # a LoRA cell's kept weights (blurbflow.models.lora)
RECORD = "blurbflow-export.json"
INDEX = "index.json"


class ExportError(ValueError):
    """A seed's kept model cannot be exported as it is (the message names the cell and fix)."""


def _retrain(result_path: str) -> str:
    return (
        f"delete {result_path} and run `snakemake all`: its job retrains that seed alone, "
        "keeping its model"
    )


def verified_seed(entry: Entry, seed: int) -> tuple[Path, dict]:
    """(the seed's kept model folder, its result) once both check out (see the module's doc)."""
    path = entry.seed(seed)["path"]
    cell = f"{entry.model}/{entry.task}/{entry.run_recipe}/{entry.hparams}/seed{seed}"
    if not path:
        raise ExportError(f"{cell}: results/cells.parquet has no result path for it")
    raw = Path(path).read_bytes()
    try:
        manifest = json.loads((Path(path).parent.parent / "seeds.json").read_bytes())
        recorded = manifest["files"][str(seed)]["result.json"]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        recorded = None
    if recorded != hashlib.sha256(raw).hexdigest():
        raise ExportError(
            f"{cell}: {path} is not the file its job recorded (seeds.json); run `snakemake all`"
            " to verify the results again before exporting"
        )
    result = json.loads(raw)
    if not result.get("model_sha256"):
        raise ExportError(
            f"{cell}: its result records no kept model (recipe {entry.run_recipe!r} trained it "
            "without `keep_model: true`); set it on the recipe and run `snakemake all`"
        )
    folder = Path(path).parent / MODEL_DIR
    weights = folder / (ADAPTER if (result.get("options") or {}).get("lora") else WEIGHTS)
    if not weights.is_file():
        raise ExportError(f"{cell}: no kept model at {weights}; {_retrain(path)}")
    if file_sha256(weights, fresh=True) != result["model_sha256"]:
        raise ExportError(
            f"{cell}: {weights} is not the model the seed saved (its sha256 differs from "
            f"result.json's model_sha256); {_retrain(path)}"
        )
    return folder, result


def _place(source: Path, target: Path) -> None:
    if source.name in (WEIGHTS, ADAPTER):
        try:
            os.link(source, target)
            return
        except OSError:
            pass  # another file system, or no hard links: a copy
    shutil.copy2(source, target)


def citation(config: dict, name: str) -> str:
    """The study's `export_models.citation`, else the paper it reproduces (blurbflow.published,
    or its `published.source`), else its title."""
    study = config["studies"][name]
    given = export_plan(study)["citation"]
    if given:
        return given
    if name in papers.studies():
        found = papers.source(name)
        table = f", the study of its Table {found['table']}" if found.get("table") else ""
        return f"{found['paper']}{table}"
    source = (study.get("published") or {}).get("source")
    return source or f"the study `{name}` ({study.get('title', name)}) of blurbflow"


def export_seed(entry: Entry, seed: int, target: Path, config: dict, select: str) -> dict:
    """One seed's folder at `target` (replaced whole); its record."""
    folder, result = verified_seed(entry, seed)
    fresh = target.with_name(target.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir(parents=True)
    for source in sorted(folder.iterdir()):
        if source.is_file() and source.name != CARD:  # the seed's own card: replaced
            _place(source, fresh / source.name)
    model_entry = (config.get("models") or {}).get(entry.model) or {}
    context = {
        "base_model": model_entry.get("hub_id"),
        "citation": citation(config, entry.study),
        "selection": select,
        "title": config["studies"][entry.study].get("title"),
        "data": config.get("data"),
    }
    metrics = metric_names(config, entry.study, entry.task)
    write_text_atomic(fresh / CARD, entry_card(entry, seed, result, metrics, context))
    record = {
        "study": entry.study,
        "model": entry.model,
        "task": entry.task,
        "recipe": entry.recipe,
        "run_recipe": entry.run_recipe,
        "hparams": entry.hparams,
        "seed": seed,
        "selection": select,
        "rule": TIE_RULE if select == "best_seed" else "every seed that finished ok",
        "metrics": {"dev": metrics[0], "test": metrics[1]},
        "scores": {"dev": entry.seed(seed)["dev"], "test": entry.seed(seed)["test"]},
        "entry": {"dev": entry.dev, "test": entry.test, "seeds": _seeds(entry)},
        "source": str(folder),
        "blurbflow_version": package_version("blurbflow"),
    }
    write_json_atomic(fresh / RECORD, record)
    files = {p.name: file_sha256(p, fresh=True) for p in sorted(fresh.iterdir()) if p.is_file()}
    shutil.rmtree(target, ignore_errors=True)
    fresh.rename(target)
    return {**record, "folder": str(target), "files": files}


def _seeds(entry: Entry) -> list[dict]:
    return [{k: s[k] for k in ("seed", "status", "dev", "test")} for s in entry.seeds]


def export_study(config: dict, study: str, cells: str, out: str) -> dict:
    """Export the study's chosen seeds into the folder `out` (results/models/{study}), which is
    replaced; `out`/index.json lists each entry's folders, or why it has none."""
    plan = export_plan(config["studies"].get(study) or {})
    if plan is None:
        raise ConfigError(f"studies.{study}: no `export_models`; set `export_models: best_seed`")
    frame = pd.read_parquet(cells)
    root = Path(out)
    shutil.rmtree(root, ignore_errors=True)
    exported, skipped = [], []
    for entry in study_entries(frame, config, study):
        place = root / entry.model / entry.task / entry.recipe
        if not entry.exported:
            reason = "no seed finished ok with a dev score"
            skipped.append({"model": entry.model, "task": entry.task, "recipe": entry.recipe,
                            "reason": reason})  # fmt: skip
            print(f"{entry.model}/{entry.task}/{entry.recipe}: not exported ({reason})")
            continue
        for seed in entry.exported:
            target = place if plan["select"] == "best_seed" else place / f"seed{seed}"
            target.parent.mkdir(parents=True, exist_ok=True)
            exported.append(export_seed(entry, seed, target, config, plan["select"]))
            print(f"{entry.model}/{entry.task}/{entry.recipe}: seed {seed} -> {target}")
    index = {"study": study, "selection": plan["select"], "models": exported, "skipped": skipped}
    write_json_atomic(root / INDEX, index)
    return index
