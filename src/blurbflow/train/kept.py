"""A recipe's `keep_model: true`: every seed keeps its fine-tuned model as a Hugging Face folder,
`seed{N}/model/` — config, safetensors weights, the tokenizer and a model card (README.md) — of
the evaluation the cell reports (best on dev, or the last), so it loads with the task type's
`AutoModelFor…` class (the `linear` head; other heads hold blurbflow's own modules). The card
names the task, the data's digests, the scores, the seed and the recipe. `KeptModel` is the
loop's hook (train/hooks.py) that saves it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from blurbflow.models.load import load_tokenizer
from blurbflow.models.lora import ADAPTER_WEIGHTS, save_pretrained
from blurbflow.models.prefetch import model_folder
from blurbflow.options import CellOptions
from blurbflow.train.hooks import Hook
from blurbflow.util.digests import file_sha256

MODEL_DIR = "model"
WEIGHTS_FILE = "model.safetensors"


class KeptModel(Hook):
    """Saves the weights at each evaluation the cell may report (a better dev score, or every
    one with `select: last`); the tokenizer, card and `model_sha256` when the result is made."""

    def __init__(self, options: CellOptions, cell_dir: Path, data_dir: Path | None):
        self.options, self.cell_dir, self.data_dir = options, Path(cell_dir), data_dir

    def on_evaluate(self, run, state, record: dict, improved: bool) -> None:
        if improved or self.options.selection == "last":
            save_model(run.opt.model, self.cell_dir)

    def on_result(self, run, result: dict) -> dict:
        return finish_model(self.options, self.cell_dir, result, self.data_dir)


def save_model(model, cell_dir: Path) -> None:
    """The model as it is now, replacing an earlier save: written beside, then renamed, so a
    kill mid-save leaves the earlier folder (or none), never a torn one."""
    final = Path(cell_dir) / MODEL_DIR
    fresh = final.with_name(MODEL_DIR + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    save_pretrained(model, fresh)  # a LoRA model: its adapter and head (models/lora.py)
    if final.exists():
        old = final.with_name(MODEL_DIR + ".old")
        shutil.rmtree(old, ignore_errors=True)
        final.rename(old)
        fresh.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        fresh.rename(final)


def finish_model(options: CellOptions, cell_dir: Path, result: dict, data_dir: Path | None) -> dict:
    """The tokenizer and the card beside the kept weights; the result's `model_sha256`."""
    folder = Path(cell_dir) / MODEL_DIR
    weights = folder / (ADAPTER_WEIGHTS if options.lora else WEIGHTS_FILE)
    if not weights.exists():
        return {}  # no evaluation ran (a cell that diverged before its first)
    source = str(model_folder(options.model_options))
    load_tokenizer(source, trust_remote_code=bool(options.trust_remote_code)).save_pretrained(
        folder
    )
    (folder / "README.md").write_text(model_card(options, result, data_dir), encoding="utf-8")
    return {"model_sha256": file_sha256(weights, fresh=True)}


def _checksums(data_dir: Path | None) -> dict:
    if data_dir is None:
        return {}
    try:
        return json.loads((Path(data_dir) / "stats.json").read_text()).get("checksums", {})
    except (OSError, ValueError):
        return {}


def model_card(options: CellOptions, result: dict, data_dir: Path | None) -> str:
    task, metric = options.task, result.get("metric", "")
    base = options.model_source
    front = {
        "library_name": "peft" if options.lora else "transformers",
        "tags": ["blurbflow", "biomedical", task],
        "base_model": base,
        "metrics": [metric],
    }
    lines = ["---", *(f"{k}: {json.dumps(v)}" for k, v in front.items()), "---", ""]
    lines += [
        f"# {options.model} fine-tuned on {task} (recipe `{options.recipe}`, seed {options.seed})",
        "",
        f"Fine-tuned by blurbflow from `{base}` on the BLURB task `{task}`.",
        "",
        "| score | dev | test | chance (test) |",
        "|---|---|---|---|",
        f"| {metric} | {_number(result.get('dev'))} | {_number(result.get('test'))} | "
        f"{_number(result.get('chance_test'))} |",
        "",
        f"Selected evaluation: epoch {result.get('selected_epoch')} ({result.get('selection')}); "
        f"status {result.get('status')}.",
        "",
        "Prepared data (sha256 of each split's parquet file):",
        "",
        *(f"- {split}: `{digest}`" for split, digest in sorted(_checksums(data_dir).items())),
        "",
        f"Hyperparameters (grid point `{options.hparams}`):",
        "",
        "```json",
        json.dumps(options.to_dict(), indent=1, sort_keys=True, default=str),
        "```",
        "",
        f"Protocol: blurbflow recipe `{options.recipe}` (docs/recipes.md of blurbflow, and the "
        "paper whose protocol the recipe follows, docs/fidelity.md); cite blurbflow with its "
        "CITATION.cff and that paper.",
        "",
    ]
    return "\n".join(lines)


def _number(value) -> str:
    return "–" if value is None else f"{float(value):.2f}"
