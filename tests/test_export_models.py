"""Exporting and publishing models (issue 24; docs/models.md): which seed a table entry exports
(best dev, ties to the lowest seed, never a failed, rejected or diverged one), the checks of
`export_models` and `publish`, the verification of a kept folder before it is exported, and
the upload up to the Hugging Face Hub's boundary (a fake HfApi records the calls)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from blurbflow.export.check import check_export, publish_settings, repo_id
from blurbflow.export.choose import best_seed, study_entries
from blurbflow.export.folder import ExportError, export_study, verified_seed
from blurbflow.export.publish import PublishError, publish_study
from blurbflow.record.schema import COLUMNS
from blurbflow.results.aggregate import normalise_types
from blurbflow.util.errors import ConfigError

MODEL, TASK, POINT = "tiny-biobert", "biosses", "lr0.001-bs16"


def config(**study) -> dict:
    recipe = {"lr": 1e-3, "epochs": 2, "keep_model": True}
    return {
        "models": {MODEL: {"path": f"resources/models/{MODEL}"}},
        "recipes": {"quick": recipe, "slow": {**recipe, "lr": 1e-4}},
        "studies": {
            "s": {
                "title": "A study",
                "models": [MODEL],
                "tasks": [TASK],
                "recipes": ["quick"],
                "seeds": 5,
                "export_models": "best_seed",
                **study,
            }
        },
    }


def row(seed, dev, status="ok", recipe="quick", hparams=POINT, test=None) -> dict:
    folder = f"results/cells/{MODEL}/{TASK}/{recipe}/{hparams}/seed{seed}"
    return {
        "model": MODEL,
        "task": TASK,
        "recipe": recipe,
        "hparams": hparams,
        "seed": seed,
        "status": status,
        "dev": dev,
        "test": dev - 1 if test is None and dev is not None else test,
        "metric": "pearson",
        "path": f"{folder}/result.json",
    }


def frame(rows) -> pd.DataFrame:
    return normalise_types(pd.DataFrame(rows, columns=COLUMNS))


def seeds(*pairs) -> list[dict]:
    return [{"seed": s, "status": st, "dev": d} for s, st, d in pairs]


# --- which seed ---------------------------------------------------------------------------


def test_the_best_dev_wins_and_a_tie_goes_to_the_lowest_seed():
    assert best_seed(seeds((1, "ok", 80.0), (2, "ok", 85.0), (3, "ok", 84.0))) == 2
    assert best_seed(seeds((3, "ok", 85.0), (2, "ok", 85.0), (1, "ok", 70.0))) == 2


def test_failed_rejected_and_diverged_seeds_are_never_chosen():
    candidates = seeds((1, "failed", 99.0), (2, "diverged", 98.0), (3, "ok", 60.0))
    assert best_seed(candidates) == 3
    assert best_seed(seeds((1, "failed", 99.0), (2, "missing", None))) is None
    assert best_seed(seeds((1, "ok", float("nan")), (2, "ok", None))) is None


def test_an_entry_exports_its_best_seed_at_the_grid_point_chosen_on_dev():
    cells = frame(
        [
            row(1, 80.0), row(2, 82.0), row(3, 82.0),  # mean dev 81.33: the chosen point
            row(4, 99.0, status="failed"),  # a rejected seed: a failed row
            row(5, 97.0, status="diverged"),
            row(1, 90.0, hparams="lr0.0001-bs16"), row(2, 50.0, hparams="lr0.0001-bs16"),
        ]
    )  # fmt: skip
    (entry,) = study_entries(cells, config(), "s")
    assert (entry.recipe, entry.run_recipe, entry.hparams) == ("quick", "quick", POINT)
    assert entry.exported == [2]  # 82 twice: seed 2; never the 90 of the other point
    assert [s["seed"] for s in entry.seeds] == [1, 2, 3, 4, 5]
    assert entry.dev["n"] == 3 and entry.dev["mean"] == pytest.approx(244 / 3)
    assert entry.test["mean"] == pytest.approx(241 / 3)
    assert entry.dev["std"] == pytest.approx(pd.Series([80.0, 82.0, 82.0]).std())
    assert entry.seed(2)["path"].endswith(f"quick/{POINT}/seed2/result.json")

    every = config(export_models={"select": "all_seeds"})
    (entry,) = study_entries(cells, every, "s")
    assert entry.exported == [1, 2, 3]


def test_a_choose_group_exports_the_recipe_chosen_on_dev_under_its_label():
    cells = frame(
        [row(1, 70.0), row(2, 72.0), row(1, 75.0, recipe="slow"), row(2, 71.0, recipe="slow")]
    )
    study = {"recipes": ["quick", "slow"], "choose": {"best": ["quick", "slow"]}}
    (entry,) = study_entries(cells, config(**study), "s")
    assert (entry.recipe, entry.run_recipe, entry.exported) == ("best", "slow", [1])


# --- config checks ------------------------------------------------------------------------


def test_a_recipe_that_keeps_no_model_stops_naming_it_and_the_fix():
    cfg = config(recipes=["quick", "slow"])
    cfg["recipes"]["slow"] = {"lr": 1e-4}
    with pytest.raises(ConfigError, match=r"studies\.s\.export_models: recipe\(s\) slow do not"):
        check_export(cfg)
    cfg["recipes"]["slow"] = {"extends": "quick"}  # keep_model comes with extends
    check_export(cfg)
    with pytest.raises(ConfigError, match="cross-validated tasks gad"):
        check_export(config(tasks=["gad"], cross_validation={"tasks": ["gad"]}))


def test_a_recipe_with_blurbflows_own_head_cannot_export():
    cfg = config(tasks=[TASK, "gad"])
    cfg["recipes"]["quick"]["re_pooling"] = "max"  # relations only: gad's head is blurbflow's
    with pytest.raises(ConfigError, match=r"recipe 'quick' on gad trains blurbflow's own head"):
        check_export(cfg)
    cfg["studies"]["s"]["tasks"] = [TASK]
    check_export(cfg)  # biosses has no entities: re_pooling does not apply
    cfg = config()
    cfg["recipes"]["quick"]["head"] = "bilstm"
    with pytest.raises(ConfigError, match=r"\(head 'bilstm'\), which cannot be kept"):
        check_export(cfg)


@pytest.mark.parametrize(
    ("publish", "message"),
    [
        ({"repo_prefix": "no-owner-"}, r"publish\.repo_prefix: 'no-owner-'"),
        ({"repo_prefix": "me/", "name": "{model}-{lr}"}, r"publish\.name: unknown field \{lr\}"),
        ({"repo_prefix": "me/x--"}, "is not one the hub accepts"),
        ({"repo_prefix": "me/", "studies": ["t"]}, r"publish\.studies: 't' is not a study"),
    ],
)
def test_a_bad_publish_section_stops_naming_its_key(publish, message):
    cfg = config()
    cfg["publish"] = publish
    with pytest.raises(ConfigError, match=message):
        check_export(cfg)


def test_two_studies_publishing_to_one_repository_stop():
    cfg = config()
    cfg["studies"]["t"] = dict(cfg["studies"]["s"])
    cfg["publish"] = {"repo_prefix": "me/bf-"}
    with pytest.raises(ConfigError, match=r"me/bf-tiny-biobert-biosses-quick would hold both"):
        check_export(cfg)
    cfg["publish"]["name"] = "{study}-{model}-{task}"
    check_export(cfg)
    settings = {"repo_prefix": "me/bf-", "name": "{task}"}
    assert repo_id(settings, task="gad", seed=3) == "me/bf-gad-seed3"
    assert repo_id(settings, task="gad") == "me/bf-gad"


# --- a kept folder is verified before it is exported --------------------------------------


def kept_seed(root: Path, seed: int, dev: float, weights: bytes = b"weights") -> None:
    """A seed folder as a keep_model job leaves it: result.json (with model_sha256), the
    kept model folder, and the job's seeds.json recording result.json's sha256."""
    folder = root / row(seed, dev)["path"]
    model = folder.parent / "model"
    model.mkdir(parents=True, exist_ok=True)
    (model / "model.safetensors").write_bytes(weights)
    (model / "config.json").write_text("{}")
    (model / "README.md").write_text("the seed's own card")
    result = {
        "status": "ok",
        "dev": dev,
        "test": dev - 1,
        "options": {"lr": 1e-3, "seed": seed},
        "identity": {"data": {"train": "a1", "dev": "b2", "test": "c3"}},
        "model_sha256": hashlib.sha256(weights).hexdigest(),
    }
    raw = json.dumps(result).encode()
    folder.write_bytes(raw)
    manifest_path = folder.parent.parent / "seeds.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"files": {}}
    manifest["files"][str(seed)] = {"result.json": {"sha256": hashlib.sha256(raw).hexdigest()}}
    manifest_path.write_text(json.dumps(manifest))


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kept_seed(tmp_path, 1, 80.0)
    kept_seed(tmp_path, 2, 85.0, weights=b"better weights")
    frame([row(1, 80.0), row(2, 85.0)]).to_parquet("cells.parquet")
    return tmp_path


def _entry():
    (entry,) = study_entries(pd.read_parquet("cells.parquet"), config(), "s")
    return entry


def test_a_missing_kept_folder_stops_naming_the_cell_and_how_to_retrain_it(project):
    seed2 = project / row(2, 85.0)["path"]
    (seed2.parent / "model/model.safetensors").unlink()
    with pytest.raises(ExportError) as error:
        verified_seed(_entry(), 2)
    assert f"{MODEL}/{TASK}/quick/{POINT}/seed2: no kept model at" in str(error.value)
    assert f"delete {row(2, 85.0)['path']} and run `snakemake all`" in str(error.value)


def test_changed_weights_or_result_are_never_exported(project):
    seed2 = project / row(2, 85.0)["path"]
    (seed2.parent / "model/model.safetensors").write_bytes(b"other weights")
    with pytest.raises(ExportError, match="is not the model the seed saved"):
        verified_seed(_entry(), 2)
    kept_seed(project, 2, 85.0, weights=b"better weights")
    seed2.write_text(seed2.read_text().replace("85.0", "95.0"))
    with pytest.raises(ExportError, match="is not the file its job recorded"):
        verified_seed(_entry(), 2)


def test_a_result_without_a_kept_model_names_the_recipe(project):
    seed2 = project / row(2, 85.0)["path"]
    result = json.loads(seed2.read_text())
    del result["model_sha256"]
    seed2.write_text(json.dumps(result))
    manifest = json.loads((seed2.parent.parent / "seeds.json").read_text())
    manifest["files"]["2"]["result.json"]["sha256"] = hashlib.sha256(seed2.read_bytes()).hexdigest()
    (seed2.parent.parent / "seeds.json").write_text(json.dumps(manifest))
    with pytest.raises(ExportError, match="recipe 'quick' trained it without `keep_model: true`"):
        verified_seed(_entry(), 2)


def test_the_export_holds_the_best_seed_its_card_and_a_record(project):
    index = export_study(config(), "s", "cells.parquet", "results/models/s")
    (model,) = index["models"]
    target = project / f"results/models/s/{MODEL}/{TASK}/quick"
    assert model["folder"] == f"results/models/s/{MODEL}/{TASK}/quick" and model["seed"] == 2
    assert sorted(p.name for p in target.iterdir()) == sorted(model["files"])
    assert (target / "model.safetensors").read_bytes() == b"better weights"
    card = (target / "README.md").read_text()
    assert "seed 2, chosen as the best dev score of the entry's 2 seeds" in card
    assert "dev 82.50 (3.54), test 81.50 (3.54)" in card  # mean (std) over the seeds
    assert "| 2 | ok | 85.00 | 84.00 | this model |" in card
    assert "- dev: `b2`" in card and "AutoModelForSequenceClassification" in card
    assert "the study `s` (A study) of blurbflow" in card  # no paper: the study's title
    assert json.loads((target / "blurbflow-export.json").read_text())["seed"] == 2


# --- publishing, up to the hub ------------------------------------------------------------


class FakeHub:
    """Records what huggingface_hub's HfApi would have been asked to do."""

    def __init__(self):
        self.calls = []

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))
        return f"https://huggingface.co/{repo_id}"

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs["repo_id"], kwargs))
        return type("CommitInfo", (), {"oid": "abc123"})()


def published_config(**publish) -> dict:
    cfg = config()
    cfg["publish"] = {"repo_prefix": "me/bf-", **publish}
    return cfg


def test_publishing_creates_each_repository_and_uploads_its_folder(project, monkeypatch, capsys):
    export_study(config(), "s", "cells.parquet", "results/models/s")
    hub = FakeHub()
    monkeypatch.setattr("huggingface_hub.HfApi", lambda: hub)
    monkeypatch.setenv("HF_TOKEN", "hf_secretsecretsecret")
    record = publish_study(published_config(), "s", "results/models/s", "published/s.json")
    files = ["README.md", "blurbflow-export.json", "config.json", "model.safetensors"]
    repo, folder = "me/bf-tiny-biobert-biosses-quick", f"results/models/s/{MODEL}/{TASK}/quick"
    message = f"blurbflow study s: {MODEL} fine-tuned on {TASK} (recipe quick, seed 2)"
    assert hub.calls == [
        ("create_repo", repo, {"private": True, "repo_type": "model", "exist_ok": True}),
        (
            "upload_folder",
            repo,
            {
                "repo_id": repo,
                "folder_path": folder,
                "repo_type": "model",
                "commit_message": message,
                "allow_patterns": files,
            },
        ),
    ]
    assert record["uploads"][0]["commit"] == "abc123" and not record["dry_run"]
    written = Path("published/s.json").read_text() + capsys.readouterr().out
    assert "hf_secret" not in written and repo in written


def test_a_dry_run_calls_nothing_and_lists_the_uploads(project, monkeypatch, capsys):
    export_study(config(), "s", "cells.parquet", "results/models/s")
    monkeypatch.setattr("huggingface_hub.HfApi", lambda: pytest.fail("no hub in a dry run"))
    record = publish_study(published_config(dry_run=True, private=False), "s",
                           "results/models/s", "published/s.json")  # fmt: skip
    out = capsys.readouterr().out
    assert (
        record["dry_run"] and record["uploads"][0]["repo_id"] == "me/bf-tiny-biobert-biosses-quick"
    )
    assert "dry run: would upload results/models/s/tiny-biobert/biosses/quick to " in out
    assert "(public): README.md, blurbflow-export.json, config.json, model.safetensors" in out


def test_no_token_or_a_changed_export_uploads_nothing(project, monkeypatch):
    export_study(config(), "s", "cells.parquet", "results/models/s")
    monkeypatch.setattr("huggingface_hub.get_token", lambda: None)
    with pytest.raises(PublishError, match="no Hugging Face token: set HF_TOKEN"):
        publish_study(published_config(), "s", "results/models/s", "published/s.json")
    card = Path(f"results/models/s/{MODEL}/{TASK}/quick/README.md")
    card.write_text(card.read_text() + "edited")
    with pytest.raises(PublishError, match="README.md: changed since the export wrote it"):
        publish_study(published_config(), "s", "results/models/s", "p.json", api=FakeHub())
    assert not Path("published/s.json").exists() and not Path("p.json").exists()


def test_every_seed_gets_its_folder_and_its_repository(project):
    every = config(export_models={"select": "all_seeds"})
    index = export_study(every, "s", "cells.parquet", "results/models/s")
    place = f"results/models/s/{MODEL}/{TASK}/quick"
    assert [(m["seed"], m["folder"]) for m in index["models"]] == [
        (1, f"{place}/seed1"),
        (2, f"{place}/seed2"),
    ]
    assert Path(f"{place}/seed1/model.safetensors").read_bytes() == b"weights"
    assert (
        "every seed of the entry that finished ok is exported; this is seed 1"
        in Path(f"{place}/seed1/README.md").read_text()
    )
    every["publish"] = {"repo_prefix": "me/bf-", "dry_run": True}
    record = publish_study(every, "s", "results/models/s", "published/s.json")
    assert [u["repo_id"] for u in record["uploads"]] == [
        "me/bf-tiny-biobert-biosses-quick-seed1",
        "me/bf-tiny-biobert-biosses-quick-seed2",
    ]


def test_the_command_line_exports_and_lists_the_uploads_with_dry_run(project, capsys):
    from blurbflow.cli import main

    cfg = Path("study.yaml")
    cfg.write_text(json.dumps(published_config()))
    assert (
        main(["export-models", "--config", str(cfg), "--study", "s", "--cells", "cells.parquet"])
        == 0
    )
    assert json.loads(Path("results/models/s/index.json").read_text())["models"][0]["seed"] == 2
    assert main(["publish-models", "--config", str(cfg), "--study", "s", "--dry-run"]) == 0
    assert "dry run: would upload" in capsys.readouterr().out
    assert json.loads(Path("results/published/s.json").read_text())["dry_run"] is True
    Path(f"results/models/s/{MODEL}/{TASK}/quick/config.json").write_text("{}\n")
    assert main(["publish-models", "--config", str(cfg), "--study", "s", "--dry-run"]) == 1
    assert "config.json: changed since the export wrote it" in capsys.readouterr().err


def test_a_failed_upload_names_its_repository(project):
    export_study(config(), "s", "cells.parquet", "results/models/s")

    class Offline(FakeHub):
        def upload_folder(self, **kwargs):
            raise ConnectionError("no route to huggingface.co")

    failed = r"me/bf-tiny-biobert-biosses-quick: the upload failed \(ConnectionError: no route"
    with pytest.raises(
        PublishError, match=failed + r" to huggingface.co\); uploaded before it: none"
    ):
        publish_study(published_config(), "s", "results/models/s", "p.json", api=Offline())
    assert not Path("p.json").exists()


def test_flags_given_as_text_on_the_command_line_count():
    """`--config 'publish={dry_run: true}'` hands Snakemake's nested values over as text."""
    cfg = published_config(dry_run="true", private="false")
    settings = publish_settings(cfg)
    assert settings["dry_run"] is True and settings["private"] is False
    assert publish_settings(published_config())["private"] is True
