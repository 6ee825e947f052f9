"""A max_length beyond the model's positions stops before any training, naming the key and the
limit: where the workflow plans when the model's files are there, else in the tokenize step,
before anything is tokenized (it used to fail in the first forward pass)."""

from __future__ import annotations

import json

import pytest
import yaml

from blurbflow.config import cell_jobs, check_max_length, expand_cells
from blurbflow.models.limits import check_input_length, position_limit
from blurbflow.options import ModelOptions
from blurbflow.steps import tokenize
from blurbflow.util.errors import ConfigError

from workflow_helpers import REPO, copy_workflow, cut_published, snakemake


def model_folder(root, model_type="bert", positions=512, pad=0):
    root.mkdir(parents=True, exist_ok=True)
    config = {"model_type": model_type, "max_position_embeddings": positions}
    (root / "config.json").write_text(json.dumps({**config, "pad_token_id": pad}))
    for name in ("vocab.txt", "model.safetensors"):  # a model folder's files, by name
        (root / name).write_text("")
    return root


def test_roberta_positions_start_after_the_padding_id(tmp_path):
    assert position_limit(model_folder(tmp_path / "b")) == 512
    assert position_limit(model_folder(tmp_path / "r", "roberta", 514, pad=1)) == 512
    assert position_limit(tmp_path / "missing") is None


def config(folder, **task) -> dict:
    return {
        "models": {"mine": {"path": str(folder)}},
        "recipes": {"r": {"lr": 1e-3, "batch_size": 8}},
        "tasks": {"gad": task} if task else {},
        "studies": {"s": {"models": ["mine"], "tasks": ["gad"], "recipes": ["r"], "seeds": 1}},
    }


def test_a_length_beyond_the_positions_names_the_key_and_the_limit(tmp_path):
    cfg = config(model_folder(tmp_path / "m"), max_length=1024)
    with pytest.raises(ConfigError, match=r"tasks\.gad\.max_length: 1024 .*512 positions"):
        check_max_length(cfg, cell_jobs(expand_cells(cfg)).values())
    check_max_length(config(tmp_path / "m", max_length=512), [])  # within: nothing raised
    fits = config(tmp_path / "m", max_length=512)
    check_max_length(fits, cell_jobs(expand_cells(fits)).values())


def test_a_model_not_there_yet_is_checked_by_the_tokenize_step(tmp_path):
    cfg = config(tmp_path / "later", max_length=1024)
    check_max_length(cfg, cell_jobs(expand_cells(cfg)).values())  # no files: nothing to check
    model_folder(tmp_path / "later")
    with pytest.raises(ConfigError, match="max_length 1024 is more than model 'mine'"):
        check_input_length(ModelOptions(model="mine", model_source=str(tmp_path / "later")), 1024)
    with pytest.raises(ConfigError, match="512 positions"):  # before reading any data
        tokenize(
            "gad",
            str(tmp_path / "nodata"),
            str(tmp_path / "later"),
            str(tmp_path / "o"),
            max_length=1024,
            model_name="mine",
        )
    assert not (tmp_path / "o").exists()


@pytest.mark.slow  # runs snakemake
def test_snakemake_stops_before_any_job(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    demo = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    demo["models"] = {"mine": {"path": str(model_folder(tmp_path / "mine")), "size": "tiny"}}
    demo["studies"]["demo"]["models"] = ["mine"]
    cut_published(demo["studies"]["demo"])  # the stand-in values name tiny-biobert
    demo["tasks"] = {"gad": {"max_length": 1024}}
    (work / "limits.yaml").write_text(yaml.safe_dump(demo))
    run = snakemake(work, "--configfile", "limits.yaml", "-n", "all")
    assert run.returncode != 0
    assert "tasks.gad.max_length: 1024 is more than model 'mine' takes (512 positions" in (
        run.stdout + run.stderr
    )
    assert not (work / "results").exists() and not (work / "resources").exists()


def test_the_named_key_is_where_the_length_is_set():
    from blurbflow.config import max_length_key

    given = {"recipes": {"base": {"max_length": 1024}, "r": {"extends": "base"}}}
    assert max_length_key(given, "gad", "r") == "recipes.base.max_length"
    folds = {"recipes": {"r": {}}, "tasks": {"gad": {"max_length": 64}}}
    assert max_length_key(folds, "gad-fold3", "r") == "tasks.gad.max_length"
