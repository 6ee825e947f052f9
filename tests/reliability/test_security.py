"""Security of model loading (DESIGN §10): a `.bin` whose pickle would run code is refused, not
executed; custom code a model folder points to (`auto_map`) runs only when the model's config
sets `trust_remote_code`. Every payload here only writes a marker file in the test's tmp dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from blurbflow.models.load import load_for_task, load_tokenizer
from blurbflow.tasks import get_task

from model_helpers import tiny_bert


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No test here needs the network: loads are from local folders only."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


def tiny_bert_folder(folder: Path, weights: bool = True):
    """A tiny BERT (config, WordPiece tokenizer, safetensors unless `weights` is False)."""
    model, config, tokenizer = tiny_bert(["aspirin reduces the risk of stroke"] * 10, 60)
    if weights:
        model.save_pretrained(folder)
    else:
        config.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model


class Payload:
    """Unpickling this runs code: it writes `marker` (harmless stand-in for os.system)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pickle ran code')",))


@pytest.mark.parametrize("zipfile", [True, False], ids=["zip-format", "legacy-format"])
def test_bin_whose_pickle_runs_code_is_refused_and_never_executed(tmp_path, zipfile):
    folder, marker = tmp_path / "model", tmp_path / "EXECUTED"
    state = tiny_bert_folder(folder, weights=False).state_dict()
    state["payload"] = Payload(marker)
    torch.save(state, folder / "pytorch_model.bin", _use_new_zipfile_serialization=zipfile)

    # The control: a full unpickle of this file does run the payload.
    torch.load(folder / "pytorch_model.bin", weights_only=False)
    assert marker.read_text() == "pickle ran code"
    marker.unlink()

    with pytest.raises(Exception, match="Weights only load failed") as error:
        load_for_task(str(folder), get_task("gad"))
    assert "exec" in str(error.value)
    assert not marker.exists()


def test_plain_bin_loads_through_weights_only(tmp_path):
    folder = tmp_path / "model"
    original = tiny_bert_folder(folder, weights=False)
    torch.save(original.state_dict(), folder / "pytorch_model.bin")
    model = load_for_task(str(folder), get_task("gad"))
    assert torch.equal(
        model.bert.embeddings.word_embeddings.weight, original.embeddings.word_embeddings.weight
    )


def remote_code_folder(folder: Path, marker: Path) -> None:
    """A BERT folder whose config and tokenizer config point (auto_map) at custom code that
    writes `marker` when imported."""
    tiny_bert_folder(folder)
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {
        "AutoConfig": "custom.CustomConfig",
        "AutoModel": "custom.CustomModel",
        "AutoModelForSequenceClassification": "custom.CustomModel",
    }
    (folder / "config.json").write_text(json.dumps(config))
    tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text())
    tokenizer_config["auto_map"] = {"AutoTokenizer": [None, "custom.CustomTokenizer"]}
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    (folder / "custom.py").write_text(
        "from pathlib import Path\n"
        "from transformers import BertConfig, BertForSequenceClassification\n"
        "from transformers import PreTrainedTokenizerFast\n"
        f"Path({str(marker)!r}).write_text('remote code ran')\n"
        "class CustomConfig(BertConfig):\n    pass\n"
        "class CustomModel(BertForSequenceClassification):\n    config_class = CustomConfig\n"
        "class CustomTokenizer(PreTrainedTokenizerFast):\n    pass\n"
    )


def test_remote_code_is_not_run_without_trust_remote_code(tmp_path):
    folder, marker = tmp_path / "model", tmp_path / "EXECUTED"
    remote_code_folder(folder, marker)

    tokenizer = load_tokenizer(str(folder))
    model = load_for_task(str(folder), get_task("gad"))

    assert not marker.exists()
    assert type(model).__module__.startswith("transformers.models.bert")
    assert model(**tokenizer(["aspirin"], return_tensors="pt")).logits.shape == (1, 2)


@pytest.mark.slow  # runs snakemake or trains for long; `make test-fast` leaves it out
def test_trust_remote_code_true_reaches_transformers(tmp_path):
    """The control of the test above: with the flag, the same folder's code does run (in a
    fresh process, so that the imported custom module stays out of this one)."""
    folder, marker = tmp_path / "model", tmp_path / "EXECUTED"
    remote_code_folder(folder, marker)
    script = (
        "import sys; from blurbflow.models.load import load_for_task, load_tokenizer; "
        "from blurbflow.tasks import get_task; "
        "tok = load_tokenizer(sys.argv[1], trust_remote_code=True); "
        "model = load_for_task(sys.argv[1], get_task('gad'), trust_remote_code=True); "
        "print(type(tok).__name__, type(model).__name__)"
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_OFFLINE": "1"}
    env["HF_MODULES_CACHE"] = str(tmp_path / "modules")
    run = subprocess.run(
        [sys.executable, "-c", script, str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["CustomTokenizer", "CustomModel"]
    assert marker.read_text() == "remote code ran"


# ---------------------------------------------------------------- the same faults in real runs
# Each test below runs `snakemake --cores 2 all` on a copy of the workflow: one study of the
# model under test × biosses (generated data, 64 training pairs) × a 1-epoch recipe × 1 seed.
# HF_HOME and HF_MODULES_CACHE point into the test's tmp dir: transformers copies a model's
# custom code there before it imports it, so that folder shows whether remote code was staged.
STUDY = "config/security.yaml"
HPARAMS = "lr0.001-bs16"
# Formats that unpickle (or can) when read; the pipeline writes none but a cell's checkpoint.pt.
PICKLE_SUFFIXES = {".pt", ".pth", ".bin", ".pkl", ".pickle", ".npy", ".joblib", ".ckpt"}


def study_workdir(tmp_path: Path, name: str, model: dict) -> Path:
    """A copy of the workflow with the study config `STUDY` for the model `name`."""
    from workflow_helpers import copy_workflow

    workdir = copy_workflow(tmp_path / "workflow")
    config = {
        "code_version": "1",
        "data": {"source": "generated", "generated_seed": 0},
        "models": {name: {"size": "tiny", **model}},
        # max_length 64: the tiny BERTs have 64 positions
        "recipes": {"quick": {"lr": 1.0e-3, "batch_size": 16, "epochs": 1, "max_length": 64}},
        "studies": {
            "security": {
                "title": "security",
                "models": [name],
                "tasks": ["biosses"],
                "recipes": ["quick"],
                "seeds": 1,
            }
        },
    }
    (workdir / STUDY).write_text(json.dumps(config, indent=1))  # JSON is YAML
    return workdir


def run_all(workdir: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    from workflow_helpers import snakemake

    env = {
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_MODULES_CACHE": str(tmp_path / "hf-modules"),
        "HF_HUB_OFFLINE": "1",
    }
    return snakemake(workdir, "--cores", "2", "all", "--configfile", STUDY, env=env, timeout=300)


def cell_dir(workdir: Path, name: str) -> Path:
    return workdir / f"results/cells/{name}/biosses/quick/{HPARAMS}/seed1"


def read_result(workdir: Path, name: str) -> dict:
    return json.loads((cell_dir(workdir, name) / "result.json").read_text())


def run_output(run: subprocess.CompletedProcess) -> str:
    return run.stdout + run.stderr


def logs_text(workdir: Path) -> str:
    return "\n".join(p.read_text() for p in sorted((workdir / "results/logs").rglob("*.log")))


def problem_rows(report: str) -> list[str]:
    """The rows of the report's "Failed, diverged and missing cells" table."""
    import re

    section = report.split('id="problems"', 1)[1]
    return re.findall(r"<tr>.*?</tr>", section, re.S)


def staged_remote_code(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "hf-modules").rglob("custom*.py"))


@pytest.mark.e2e
def test_workflow_runs_no_auto_map_code_of_a_local_model(tmp_path):
    """A `path:` model whose config.json and tokenizer_config.json point (auto_map) at code that
    writes a marker on import: tokenize and finetune load it with the plain BERT classes."""
    folder, marker = tmp_path / "model", tmp_path / "EXECUTED"
    remote_code_folder(folder, marker)
    workdir = study_workdir(tmp_path, "custom-code", {"path": str(folder)})

    run = run_all(workdir, tmp_path)

    assert run.returncode == 0, run_output(run)[-5000:]
    result = read_result(workdir, "custom-code")
    assert result["status"] == "ok" and result["error"] is None, result.get("error")
    assert result["options"]["model_source"] == str(folder)
    assert "trust_remote_code" not in result["options"]
    assert result["epochs"] and result["train_instances"] == 64
    assert not marker.exists()
    assert staged_remote_code(tmp_path) == []  # not even copied to be imported
    assert "Custom" not in logs_text(workdir) + run_output(run)
    meta = json.loads(
        next((workdir / "resources/tokenized/custom-code").rglob("meta.json")).read_text()
    )
    assert meta["tokenizer"] == str(folder)
    assert meta["vocab_size"] == len(load_tokenizer(str(folder)))  # its own WordPiece vocabulary
    # what the run wrote holds no pickle at all (a cell's checkpoint.pt exists only mid-cell)
    written = [p for d in ("resources", "results") for p in (workdir / d).rglob("*") if p.is_file()]
    assert [p for p in written if p.suffix in PICKLE_SUFFIXES] == []


@pytest.mark.e2e
def test_workflow_runs_auto_map_code_only_for_a_model_the_config_trusts(tmp_path):
    """The control of the test above: the same folder with `trust_remote_code: true` in the
    config does run its code in the jobs (so the marker would have shown it)."""
    folder, marker = tmp_path / "model", tmp_path / "EXECUTED"
    remote_code_folder(folder, marker)
    workdir = study_workdir(
        tmp_path, "custom-code", {"path": str(folder), "trust_remote_code": True}
    )

    run = run_all(workdir, tmp_path)

    assert run.returncode == 0, run_output(run)[-5000:]
    result = read_result(workdir, "custom-code")
    assert result["status"] == "ok", result.get("error")
    assert result["options"]["trust_remote_code"] is True
    assert marker.read_text() == "remote code ran"
    assert [p.name for p in staged_remote_code(tmp_path)]  # transformers copied custom.py


@pytest.mark.e2e
def test_workflow_fails_the_cell_of_a_bin_whose_pickle_runs_code(tmp_path):
    """A `path:` model whose only weights are a pytorch_model.bin carrying a code-running
    object: the finetune job fails that cell with torch's weights_only refusal, nothing runs,
    and the report built after the failure lists the cell as failed."""
    import pandas as pd

    folder, marker = tmp_path / "model", tmp_path / "EXECUTED"
    state = tiny_bert_folder(folder, weights=False).state_dict()
    state["payload"] = Payload(marker)
    torch.save(state, folder / "pytorch_model.bin")
    torch.load(folder / "pytorch_model.bin", weights_only=False)  # the control: it does run
    assert marker.read_text() == "pickle ran code"
    marker.unlink()
    workdir = study_workdir(tmp_path, "evil-bin", {"path": str(folder)})

    run = run_all(workdir, tmp_path)

    assert not marker.exists()
    assert run.returncode != 0
    output = run_output(run)
    assert "Error in rule finetune" in output and "Error in rule tokenize" not in output
    result = read_result(workdir, "evil-bin")
    assert result["status"] == "failed"
    assert result["error"].startswith("UnpicklingError: Weights only load failed"), result["error"]
    assert "GLOBAL exec was not an allowed global" in result["error"]
    assert any("load_for_task" in frame for frame in result["traceback"])
    assert not (cell_dir(workdir, "evil-bin").parent / "seeds.json").exists()
    log = (workdir / f"results/logs/cells/evil-bin/biosses/quick/{HPARAMS}.log").read_text()
    assert "seed 1: failed" in log and "Weights only load failed" in log
    # the onerror handler still aggregated and reported: the cell is listed as failed
    assert "some jobs failed; results/report.html lists them" in output
    cells = pd.read_parquet(workdir / "results/cells.partial.parquet")  # a failed run's table
    assert cells[["model", "task", "seed", "status"]].values.tolist() == [
        ["evil-bin", "biosses", 1, "failed"]
    ]
    rows = [
        row
        for row in problem_rows((workdir / "results/report.html").read_text())
        if 'class="status-failed">failed<' in row and ">evil-bin<" in row
    ]
    assert len(rows) == 1 and ">biosses<" in rows[0]
    assert "UnpicklingError: Weights only load failed" in rows[0]


@pytest.mark.e2e
def test_workflow_loads_a_cells_checkpoint_weights_only(tmp_path):
    """The one pickle the pipeline writes, a cell's checkpoint.pt, is read back when the cell
    starts (to resume): a planted one carrying a code-running object is refused, not run."""
    folder, marker = tmp_path / "model", tmp_path / "EXECUTED"
    tiny_bert_folder(folder)
    workdir = study_workdir(tmp_path, "plain", {"path": str(folder)})
    cell_dir(workdir, "plain").mkdir(parents=True)
    torch.save(
        {"options": "{}", "model": {}, "payload": Payload(marker)},
        cell_dir(workdir, "plain") / "checkpoint.pt",
    )

    run = run_all(workdir, tmp_path)

    assert not marker.exists()
    assert run.returncode != 0
    assert "Error in rule finetune" in run_output(run)
    result = read_result(workdir, "plain")
    assert result["status"] == "failed"
    assert result["error"].startswith("ValueError: results/cells/plain/"), result["error"]
    assert (
        "checkpoint.pt: cannot be read as a checkpoint with weights_only (UnpicklingError)"
        in (result["error"])
    )
    assert "delete it to train this cell afresh" in result["error"]
    assert any("checkpoint.py" in frame for frame in result["traceback"])


def test_every_torch_load_of_the_library_is_weights_only():
    """The static side of the test above, for loads a run cannot reach cheaply: every
    `torch.load` call in the package passes `weights_only=True`, and nothing else unpickles
    (pickle, pandas' read_pickle, joblib, numpy with allow_pickle) but through an Unpickler whose
    find_class resolves only the package's own classes (util/pickles.py;
    tests/test_job_cache.py plants a file that names os.system)."""
    import ast

    import blurbflow

    torch_loads, unpicklers, restricted = [], [], []
    for path in sorted(Path(blurbflow.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(base) == "pickle.Unpickler" for base in node.bases
            ):
                methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                assert "find_class" in methods, f"{path.name}:{node.lineno} resolves any class"
                restricted.append(node.name)
            if not isinstance(node, ast.Call):
                continue
            name, where = ast.unparse(node.func), f"{path.name}:{node.lineno}"
            keywords = {k.arg: k.value for k in node.keywords}
            if name.endswith("torch.load") or name == "load" and "weights_only" in keywords:
                value = keywords.get("weights_only")
                safe = isinstance(value, ast.Constant) and value.value is True
                torch_loads.append((where, safe))
            elif name.split(".")[-1] in ("read_pickle", "Unpickler") or name in (
                "pickle.load",
                "pickle.loads",
                "joblib.load",
                "dill.load",
                "dill.loads",
            ):
                unpicklers.append(where)
            elif name in ("np.load", "numpy.load"):
                value = keywords.get("allow_pickle")
                if not (value is None or isinstance(value, ast.Constant) and not value.value):
                    unpicklers.append(where)
    assert torch_loads, "expected at least the checkpoint's torch.load"
    assert [where for where, safe in torch_loads if not safe] == []
    assert unpicklers == []
    assert restricted == ["PackageUnpickler"]
