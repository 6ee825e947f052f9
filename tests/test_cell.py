"""Whole cells on a tiny model built from generated data: determinism, SIGTERM and resume,
divergence, and a stale checkpoint of other options being ignored."""

from __future__ import annotations

import inspect
import json
import os
import signal
from pathlib import Path

import pandas as pd
import pytest
import torch
from results_helpers import load_cells
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from blurbflow.options import CellOptions, defaults
from blurbflow.record.schema import CELL_KEYS, COLUMNS, Result
from blurbflow.train import batching, cell, checkpoint
from blurbflow.train.cell import train_cell
from blurbflow.train.kept import MODEL_DIR, model_card
from blurbflow.util.provenance import code_versions

from model_helpers import make_options, small_gad_project


@pytest.fixture(scope="module")
def gad(tmp_path_factory):
    return small_gad_project(tmp_path_factory.mktemp("cell"), (400, 100, 100))


def options(root: Path, **overrides) -> CellOptions:
    settings = {"recipe": "standard", "lr": 1e-3, "batch_size": 16, "epochs": 3, "seed": 3}
    return make_options(model_source=str(root / "model"), **{**settings, **overrides})


def run(root: Path, name: str, **overrides) -> dict:
    out = root / "cells" / name / "result.json"
    return train_cell(options(root, **overrides), root / "encoded", root / "data/small", out)


def comparable(result: dict) -> dict:
    epochs = [{k: v for k, v in e.items() if k != "seconds"} for e in result["epochs"]]
    return {"epochs": epochs, "selected": result["selected_epoch"], "test": result["test"]}


def test_same_cell_twice_gives_identical_metrics(gad):
    first, second = run(gad, "a"), run(gad, "b")
    assert first["status"] == "ok" and len(first["epochs"]) == 3
    assert comparable(first) == comparable(second)
    predictions = [pd.read_parquet(gad / f"cells/{n}/predictions.parquet") for n in ("a", "b")]
    assert predictions[0].equals(predictions[1]) and len(predictions[0]) == 200


@pytest.mark.slow  # runs snakemake or trains for long; `make test-fast` leaves it out
def test_sigterm_mid_epoch_saves_and_the_rerun_resumes_identically(gad, monkeypatch):
    # passes free: every batch runs as several micro-batches (the tiny model would not split)
    monkeypatch.setattr(batching, "pass_cost", lambda device_type, hidden: 0.0)
    reference = run(gad, "reference")
    assert comparable(reference) != comparable(run(gad, "reference-random", batching="random"))
    calls = {"n": 0}
    real_split = batching.micro_batches

    def split_then_sigterm(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 35:  # one call a training step, 25 an epoch: a real SIGTERM in epoch 2
            os.kill(os.getpid(), signal.SIGTERM)
        return real_split(*args, **kwargs)

    monkeypatch.setattr(batching, "micro_batches", split_then_sigterm)
    with pytest.raises(checkpoint.Preempted, match=r"SIGTERM at epoch 2 step 10\b"):
        run(gad, "interrupted")
    cell = gad / "cells/interrupted"
    assert (cell / checkpoint.CHECKPOINT).exists() and not (cell / "result.json").exists()
    monkeypatch.setattr(batching, "micro_batches", real_split)

    resumed = run(gad, "interrupted")
    assert comparable(resumed) == comparable(reference)
    assert not (cell / checkpoint.CHECKPOINT).exists()
    log = [json.loads(line) for line in (cell / "train_log.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in log] == [1, 2, 3]


def test_checkpoint_of_other_options_is_not_resumed(gad):
    cell = gad / "cells/changed"
    cell.mkdir(parents=True)
    reference = run(gad, "changed-reference", lr=2e-3)
    run(gad, "changed", epochs=1)  # leaves no checkpoint once finished; write one by hand
    (cell / "result.json").unlink()
    import torch

    torch.save({"options": "other"}, cell / checkpoint.CHECKPOINT)
    assert comparable(run(gad, "changed", lr=2e-3)) == comparable(reference)


def test_exploding_loss_ends_the_cell_as_diverged(gad):
    result = run(gad, "diverged", lr=1e9, max_grad_norm=None, warmup_ratio=0.0)
    assert result["status"] == "diverged" and "loss became" in result["error"]
    assert (gad / "cells/diverged/result.json").exists()


def test_a_cell_writes_a_progress_line_at_every_epoch_end(gad, capfd):
    run(gad, "progress", epochs=2)
    lines = [x for x in capfd.readouterr().err.splitlines() if x.startswith("tiny/gad/")]
    assert [x.split(": ", 1)[1].split(" loss")[0] for x in lines] == [
        "epoch 1/2 step 25/25 (25/50)",
        "epoch 2/2 step 25/25 (50/50)",
    ]
    assert all(" samples/s " in x and " ETA " in x and " dev " in x for x in lines), lines


# recipe keys left out of the options below: the cell must read them from its defaults
DEFAULTED = ("eval_batch_size", "select", "train_on", "train_subsample", "tagging", "precision")


@pytest.fixture(scope="module")
def fewer(gad):
    """A cell given options without the DEFAULTED keys: (the mapping given, its result.json)."""
    given = {k: v for k, v in options(gad, epochs=1).to_dict().items() if k not in DEFAULTED}
    out = gad / "cells/fewer/tiny/gad/standard/h/seed3/result.json"
    train_cell(CellOptions.from_dict(given), gad / "encoded", gad / "data/small", out)
    return given, out


def test_a_cell_given_fewer_options_reads_the_defaults_and_records_what_it_was_given(fewer):
    given, out = fewer
    result = json.loads(out.read_text())
    assert result["status"] == "ok" and result["selection"] == defaults()["select"] == "best_dev"
    assert len(result["epochs"]) == 1 and result["test"] == result["epochs"][0]["test"]
    # recorded as the options serialise: what was given, and the defaults filled in for the rest
    assert result["options"] == CellOptions.from_dict(given).to_dict()
    assert {k: v for k, v in result["options"].items() if k not in DEFAULTED} == given
    assert {k: result["options"][k] for k in DEFAULTED} == {k: defaults()[k] for k in DEFAULTED}


def test_result_json_holds_exactly_the_schema_fields(fewer):
    result = json.loads(fewer[1].read_text())
    written_only_on_failure = {"traceback"}
    written_only_with_init_from = {"init_loaded", "weights_sha256"}  # dependant, source
    written_only_with_keep_model = {"model_sha256"}
    only_sometimes = written_only_on_failure | written_only_with_init_from
    only_sometimes |= written_only_with_keep_model
    assert set(result) == set(Result.__annotations__) - only_sometimes
    assert set(result["cell"]) == set(CELL_KEYS) and result["cell"]["seed"] == 3
    assert result["versions"] == code_versions()
    assert set(result["versions"]) == {"python", "torch", "transformers", "blurbflow"}
    row = load_cells([fewer[1]])
    assert list(row.columns) == COLUMNS and row.loc[0, "status"] == "ok"
    assert row.loc[0, "test"] == result["test"] and row.loc[0, "selected_epoch"] == 1


def test_train_cell_is_setup_fit_finish():
    source = inspect.getsource(cell.train_cell)
    assert len(source.splitlines()) <= 60
    assert all(f"{part}(" in source for part in ("setup", "fit", "finish"))


# --- keep_model: a seed keeps the model it reports as a Hugging Face folder -------------------


@pytest.mark.parametrize("select", ["best_dev", "last"])
def test_a_kept_model_loads_with_auto_classes_and_predicts_as_the_cell(gad, select):
    out = gad / "kept" / select / "seed3" / "result.json"
    cell_options = options(gad, keep_model=True, epochs=3, select=select)
    result = train_cell(cell_options, gad / "encoded", gad / "data/small", out)
    folder = out.parent / MODEL_DIR
    assert result["status"] == "ok" and result["model_sha256"]
    assert not (out.parent / f"{MODEL_DIR}.new").exists()

    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    dev = pd.read_parquet(gad / "data/small/dev.parquet")
    with torch.no_grad():
        batch = tokenizer(list(dev["text"]), truncation=True, max_length=128, padding=True,
                          return_tensors="pt")  # fmt: skip
        labels = model(**batch).logits.argmax(-1).tolist()
    ours = [model.config.id2label[i] for i in labels]
    predictions = pd.read_parquet(out.parent / "predictions.parquet")
    cell_dev = [json.loads(p) for p in predictions[predictions["split"] == "dev"]["pred"]]
    # the folder is the reported evaluation's model: its dev predictions are the cell's
    assert [str(p) for p in ours] == [str(p) for p in cell_dev]
    selected = max(result["epochs"], key=lambda e: e["dev"]) if select == "best_dev" else None
    assert result["selected_epoch"] == (selected or result["epochs"][-1])["epoch"]

    card = (folder / "README.md").read_text()
    assert f"{result['dev']:.2f}" in card and f"{result['test']:.2f}" in card
    assert "gad" in card and "seed 3" in card and "library_name" in card
    stats = (
        json.loads((gad / "data/small/stats.json").read_text())
        if (gad / "data/small/stats.json").exists()
        else {}
    )
    for digest in stats.get("checksums", {}).values():
        assert digest in card


def test_the_card_lists_the_prepared_splits_digests(tmp_path):
    (tmp_path / "stats.json").write_text(
        json.dumps({"checksums": {"train": "ab12", "dev": "cd34"}})
    )
    result = {"metric": "positive_f1", "dev": 81.234, "test": 79.5, "chance_test": 50.0}
    card = model_card(options(tmp_path, keep_model=True, seed=3), result, tmp_path)
    assert "- train: `ab12`" in card and "- dev: `cd34`" in card
    assert "| positive_f1 | 81.23 | 79.50 | 50.00 |" in card and "seed 3" in card
