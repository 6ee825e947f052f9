"""Intermediate fine-tuning (recipe key `init_from`): expansion and its errors, a real tiny-BERT
source job that keeps its weights, dependants that start from them (NER → NER: head too; NER →
STS: encoder only; reinit_top after loading), verification that rejects a dependant trained from
other source weights, and the workflow's DAG edge source job → dependant job."""

from __future__ import annotations

import copy
import json
import os
import re

import pytest
import torch
import yaml
from test_hparams_from import planned
from test_recipes import FRAMES, SIZES, build_tiny, encode, ner_frame

from blurbflow.config import cell_jobs, expand_cells
from blurbflow.config.init_from import WEIGHTS, source_weights
from blurbflow.options import UNSET, InitFrom
from blurbflow.results.aggregate import aggregate
from blurbflow.tasks import get_task
from blurbflow.train.cell import build_model_and_optimizer
from blurbflow.train.job import run_cell_job
from blurbflow.train.weights import load_matching
from blurbflow.util.digests import file_sha256
from blurbflow.util.errors import ConfigError

from workflow_helpers import REPO, copy_workflow, fake_outputs, snakemake

SOURCE = "results/cells/m/bc5chem/src/lr0.001-bs8"
RECIPES = {
    "base": {"epochs": 1, "lr": 1e-3, "batch_size": 8, "adam_bias_correction": True},
    "src": {"extends": "base"},
    "inter": {"extends": "base", "init_from": {"task": "bc5chem", "recipe": "src"}},
}


def config(models=None) -> dict:
    return {
        "models": models or {"m": {"hub_id": "org/m"}},
        "recipes": copy.deepcopy(RECIPES),
        "studies": {
            "source": {"models": ["m"], "tasks": ["bc5chem"], "recipes": ["src"], "seeds": 2},
            "target": {
                "models": ["m"],
                "tasks": ["ncbidisease", "biosses"],
                "recipes": ["inter"],
                "seeds": 2,
            },
        },
    }


def test_dependants_name_their_source_and_only_sources_keep_weights():
    cells = expand_cells(config())
    dependant = cells["results/cells/m/ncbidisease/inter/lr0.001-bs8/seed2"].options
    assert dependant.init_from == InitFrom(task="bc5chem", recipe="src", hparams="lr0.001-bs8")
    assert dependant.to_dict()["init_from"] == {
        "task": "bc5chem",
        "recipe": "src",
        "hparams": "lr0.001-bs8",
        "seed": "same",
    }
    assert dependant.keep_weights is UNSET and "keep_weights" not in dependant.to_dict()
    assert [p for p, c in cells.items() if c.options.keep_weights] == [
        f"{SOURCE}/seed1",
        f"{SOURCE}/seed2",
    ]
    folder = "/work/x/results/cells/m/ncbidisease/inter/lr0.001-bs8/seed2"
    assert str(source_weights(dependant, folder)) == f"/work/x/{SOURCE}/seed2/{WEIGHTS}"
    jobs = cell_jobs(cells)
    assert jobs[SOURCE].options.keep_weights is True
    # without a dependant the source's options (and identity) are what they always were
    alone = config()
    del alone["studies"]["target"]
    assert not any(c.options.keep_weights for c in expand_cells(alone).values())


def test_a_fixed_source_seed_and_a_selected_source():
    cfg = config()
    cfg["recipes"]["inter"]["init_from"]["seed"] = 1
    options = expand_cells(cfg)["results/cells/m/biosses/inter/lr0.001-bs8/seed2"].options
    assert str(source_weights(options, "r/results/cells/m/biosses/inter/h/seed2")).endswith(
        f"{SOURCE}/seed1/{WEIGHTS}"
    )
    cfg["recipes"]["search"] = {"extends": "base", "lr": [1e-3, 2e-3]}
    cfg["recipes"]["src"] = {"extends": "base", "hparams_from": "search"}
    cfg["studies"]["source"]["recipes"] = ["search", "src"]
    cells = expand_cells(cfg)
    dependant = cells["results/cells/m/biosses/inter/lr0.001-bs8/seed2"].options
    assert dependant.init_from.hparams == "selected"
    assert cells["results/cells/m/bc5chem/src/selected/seed1"].options.keep_weights is True


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"task": "nope"}, "recipes.inter.init_from.task: unknown task 'nope'"),
        ({"recipe": "nope"}, "recipes.inter.init_from.recipe: recipes: unknown recipe 'nope'"),
        ({"recipe": "inter"}, "a recipe cannot start from its own cells"),
        ({"recipe": "chained"}, "'chained' itself starts from another cell (init_from); chains"),
        ({"recipe": "grid"}, "'grid' has a grid of 2 points; a source must be one hparams job"),
        ({"seed": "first"}, "recipes.inter.init_from.seed: 'first'; use `same` or a seed"),
        ({"seed": 7}, "studies.target: recipe 'inter' starts from " + SOURCE + "/seed7"),
        ({"oops": 1}, "recipes.inter.init_from: expected a mapping {task: <task>"),
    ],
)
def test_bad_init_from_is_named(change, message):
    bad = config()
    bad["recipes"]["chained"] = {"extends": "inter"}
    bad["recipes"]["grid"] = {"extends": "base", "batch_size": [8, 16]}
    bad["recipes"]["inter"]["init_from"].update(change)
    with pytest.raises(ConfigError, match=re.escape(message)):
        expand_cells(bad)


def test_a_source_no_study_runs_is_named():
    bad = config()
    bad["studies"]["source"]["tasks"] = ["ncbidisease"]
    with pytest.raises(ConfigError, match=r"which no study runs; add recipe 'src', task 'bc5"):
        expand_cells(bad)


def test_schema_accepts_init_from_and_refuses_unknown_keys():
    import jsonschema

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    cfg = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    cfg["recipes"]["inter"] = {"init_from": {"task": "gad", "recipe": "standard", "seed": 3}}
    jsonschema.validate(cfg, schema)
    cfg["recipes"]["inter"]["init_from"]["seed"] = "first"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(cfg, schema)


# --- a real source job and its dependants on a tiny BERT --------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("init_from")
    build_tiny("bert", root / "models" / "bert")
    frames = {**FRAMES, "bc5chem": lambda split, n, seed: ner_frame(split, n, seed + 10)}
    for task in ("bc5chem", "ncbidisease", "biosses"):
        folder = root / "data" / task
        folder.mkdir(parents=True)
        for k, (split, n) in enumerate(SIZES.items()):
            frames[task](split, n, k).to_parquet(folder / f"{split}.parquet")
    return root


def run_jobs(root, cfg, tasks):
    """Run the config's jobs of `tasks` as the workflow would (cwd = project root)."""
    for path, job in cell_jobs(expand_cells(cfg)).items():
        if job.task in tasks:
            run_cell_job(
                job.options,
                list(job.seeds),
                encode(root, job.task),
                root / "data" / job.task,
                root / path / "seeds.json",
            )


def tiny_config(root) -> dict:
    cfg = config({"m": {"path": str(root / "models/bert")}})
    cfg["tasks"] = {t: {"max_length": 64} for t in ("bc5chem", "ncbidisease", "biosses")}
    for study in cfg["studies"].values():
        study["seeds"] = 1
    return cfg


def dependant_model(cfg, task, root, **changes):
    """The dependant's model as its cell builds it (before training), and what was loaded."""
    options = expand_cells(cfg)[f"results/cells/m/{task}/inter/lr0.001-bs8/seed1"].options
    settings = options.replace(**changes)
    report = {}
    weights = source_weights(settings, root / f"results/cells/m/{task}/inter/h/seed1")
    model, _, _ = build_model_and_optimizer(
        settings, get_task(task), 40, init_weights=weights, report=report
    )
    return model.state_dict(), report


@pytest.mark.slow  # trains several tiny jobs
def test_dependants_start_from_the_source_weights_and_rerun_when_they_change(
    project, monkeypatch, capsys
):
    monkeypatch.chdir(project)
    cfg = tiny_config(project)
    run_jobs(project, cfg, {"bc5chem"})
    weights = project / SOURCE / "seed1" / WEIGHTS
    result = json.loads((project / SOURCE / "seed1/result.json").read_text())
    assert result["weights_sha256"] == file_sha256(weights)
    manifest = json.loads((project / SOURCE / "seeds.json").read_text())
    assert manifest["files"]["1"][WEIGHTS]["sha256"] == file_sha256(weights)
    saved = torch.load(weights, weights_only=True)

    # NER → NER: every tensor, the head included, is the source's before training
    state, report = dependant_model(cfg, "ncbidisease", project)
    assert report["loaded"] == len(state) and report["fresh"] == [] and report["unused"] == []
    assert all(torch.equal(state[k], saved[k]) for k in state)
    # NER → STS: the encoder is the source's, the head (1 output, not 3) stays fresh and the
    # pooler (which token classification has not) stays the pre-trained one
    state, report = dependant_model(cfg, "biosses", project)
    head = ["classifier.bias", "classifier.weight"]
    assert report["fresh"] == ["bert.pooler.dense.bias", "bert.pooler.dense.weight", *head]
    assert report["unused"] == head
    encoder = [k for k in saved if k.startswith("bert.")]
    assert len(encoder) == report["loaded"] > 30
    assert all(torch.equal(state[k], saved[k]) for k in encoder)
    # layer surgery applies after loading: the top layer is re-initialised, the lower kept
    state, _ = dependant_model(cfg, "ncbidisease", project, reinit_top=1)
    top, low = "bert.encoder.layer.1.attention.self.query.weight", "bert.encoder.layer.0.output"
    assert not torch.equal(state[top], saved[top])
    assert all(torch.equal(state[k], saved[k]) for k in state if k.startswith(low))

    run_jobs(project, cfg, {"ncbidisease", "biosses"})
    dependant = project / "results/cells/m/ncbidisease/inter/lr0.001-bs8/seed1/result.json"
    result = json.loads(dependant.read_text())
    assert result["identity"]["init_weights"] == file_sha256(weights)
    assert result["init_loaded"]["loaded"] == len(saved) and result["init_loaded"]["fresh"] == []
    cells = aggregate(cfg, project)
    assert (cells["status"] == "ok").all(), cells[["task", "recipe", "status", "error"]]

    capsys.readouterr()
    run_jobs(project, cfg, {"bc5chem", "ncbidisease"})  # nothing changed: every seed kept
    assert capsys.readouterr().out.count("seed 1: kept") == 2

    # the source re-trained with other options: new weights; the old dependant no longer verifies
    changed = copy.deepcopy(cfg)
    changed["recipes"]["src"]["dropout"] = 0.2
    run_jobs(project, changed, {"bc5chem"})
    assert file_sha256(weights) != result["identity"]["init_weights"]
    cells = aggregate(changed, project, drop=False)
    error = cells.loc[cells["task"] == "ncbidisease", "error"].iloc[0]
    assert error == (
        "rejected: its identity differs in init_weights content from what the job computed"
    )
    capsys.readouterr()
    run_jobs(project, changed, {"ncbidisease"})
    assert "seed 1: training (its identity differs in init_weights" in capsys.readouterr().out
    assert json.loads(dependant.read_text())["identity"]["init_weights"] == file_sha256(weights)

    # a source whose weights were deleted is retrained (its seed no longer verifies)
    weights.unlink()
    cells = aggregate(changed, project, drop=False)
    errors = set(cells["error"].dropna())
    assert f"rejected: {WEIGHTS} is missing (dependants start from it: init_from)" in errors
    assert any("the weights it started from are gone" in e for e in errors)


def test_loading_reports_what_matched(tmp_path):
    source = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    torch.save(source.state_dict(), tmp_path / WEIGHTS)
    target = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 1))
    report = load_matching(target, tmp_path / WEIGHTS)
    assert report["loaded"] == 2 and report["fresh"] == ["1.bias", "1.weight"]
    assert torch.equal(target[0].weight, source[0].weight)
    (tmp_path / WEIGHTS).write_text("torn")
    with pytest.raises(ValueError, match="cannot be read as source weights"):
        load_matching(target, tmp_path / WEIGHTS)


# --- the workflow's DAG edge ------------------------------------------------------------------


def dry_run(work, target, *args):
    run = snakemake(work, "--configfile", "inter.yaml", "-n", "--cores", "1", *args, target)
    assert run.returncode == 0, run.stderr
    return run.stdout + run.stderr


@pytest.mark.e2e
@pytest.mark.slow  # runs snakemake
def test_dry_run_plans_the_dependant_after_its_source(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    demo = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    demo["recipes"]["inter"] = {
        "extends": "standard",
        "init_from": {"task": "ncbidisease", "recipe": "standard"},
    }
    demo["studies"]["inter"] = {
        "models": ["tiny-biobert"],
        "tasks": ["biosses"],
        "recipes": ["inter"],
        "seeds": 2,
    }
    (work / "inter.yaml").write_text(yaml.safe_dump(demo))
    target = "results/cells/tiny-biobert/biosses/inter/lr0.001-bs16/seeds.json"
    source = "results/cells/tiny-biobert/ncbidisease/standard/lr0.001-bs16/seeds.json"
    files = fake_outputs(work, dry_run(work, target, "--summary"))
    assert source in files  # the source job is an input of the dependant's
    assert "Nothing to be done" in dry_run(work, target)
    os.utime(work / source, (1e9 + 10, 1e9 + 10))  # the source job ran again
    assert planned(dry_run(work, target)) == ["finetune/lr0.001-bs16"]
    os.utime(work / source, (1e9, 1e9))
    # a forced (e.g. re-configured) source job plans its dependant after it
    output = dry_run(work, target, f"--forcerun={source}")
    assert re.findall(r"output: (\S+seeds\.json)", output) == [source, target]
