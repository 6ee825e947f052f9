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


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No test here needs the network: loads are from local folders only."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


def tiny_bert_folder(folder: Path, weights: bool = True):
    """A tiny BERT (config, WordPiece tokenizer, safetensors unless `weights` is False)."""
    from transformers import BertConfig, BertModel

    from blurbflow.models.build import train_tokenizer

    torch.manual_seed(0)
    tokenizer = train_tokenizer(["aspirin reduces the risk of stroke"] * 10, 60)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    model = BertModel(config)
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
