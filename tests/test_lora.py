"""Recipe option `lora` (blurbflow.models.lora): whole cells, in process, on a tiny random Llama
(config + `save_pretrained`, nothing downloaded) for sequence (GAD) and token (BC5-chem)
classification and on the demo's tiny BERT: only the adapters' A/B matrices and the task head
train (counted), and the kept model — adapter and head, with a card naming the base model —
reloads with peft and predicts exactly what the cell predicted."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from peft import PeftConfig, PeftModel
from torch import nn
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    LlamaConfig,
    LlamaModel,
)

from blurbflow.config import cell_options
from blurbflow.data.generate import generate_source
from blurbflow.data.prepare import prepare_task
from blurbflow.models.build import build_demo_model
from blurbflow.models.load import load_tokenizer
from blurbflow.models.lora import ADAPTER_WEIGHTS, encoder_linear_names
from blurbflow.options import CellOptions, InputOptions
from blurbflow.tasks import get_task
from blurbflow.train.cell import build_model_and_optimizer, train_cell
from blurbflow.train.encode import encode_task, load_meta
from blurbflow.train.inputs import Splits
from blurbflow.train.kept import MODEL_DIR
from blurbflow.train.predict import BatchFormat, label_dtype, predict
from blurbflow.util.errors import ConfigError

from model_helpers import make_options

SIZES = {"train": 48, "dev": 24, "test": 24}
TASKS = ("gad", "bc5chem")  # sequence and token classification
LORA = {"r": 2, "alpha": 4, "dropout": 0.0}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """GAD and BC5-chem generated, prepared and cut; the demo BERT built on them; a tiny random
    Llama over the same tokenizer; both tasks encoded (the two models share the token ids)."""
    root = tmp_path_factory.mktemp("lora")
    for task in TASKS:
        generate_source(task, root / f"raw/{task}")
        prepare_task(task, root / "raw", root / f"data/full/{task}")
        (root / f"data/{task}").mkdir(parents=True)
        for split, n in SIZES.items():
            frame = pd.read_parquet(root / f"data/full/{task}/{split}.parquet").head(n)
            frame.to_parquet(root / f"data/{task}/{split}.parquet")
    corpus = [root / f"data/{task}/train.parquet" for task in TASKS]
    build_demo_model(corpus, root / "bert", hidden_size=32, pretrain_epochs=0, vocab_size=600)
    tokenizer = load_tokenizer(str(root / "bert"))
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=128,
        pad_token_id=tokenizer.pad_token_id,
    )
    LlamaModel(config).save_pretrained(root / "llama")
    tokenizer.save_pretrained(root / "llama")
    for task in TASKS:
        inputs = InputOptions(max_length=128)
        encode_task(get_task(task), root / f"data/{task}", tokenizer, inputs, root / f"enc/{task}")
    return root


def lora_options(root, arch: str, task: str, **overrides) -> CellOptions:
    settings = {"lr": 5e-3, "batch_size": 8, "epochs": 2, "seed": 1, "keep_model": True}
    return make_options(
        model=arch,
        model_source=str(root / arch),
        task=task,
        recipe="lora",
        **{"lora": LORA, **settings, **overrides},
    )


def expected_trainable(model, lora_r: int) -> int:
    """r·(in + out) per adapted linear layer of the encoder, plus every head parameter."""
    encoder = model.base_model
    adapters = sum(
        lora_r * (m.in_features + m.out_features)
        for m in encoder.modules()
        if isinstance(m, nn.Linear)
    )
    return adapters + sum(p.numel() for n, p in model.named_parameters() if n.split(".")[0] in (
        "classifier", "score"
    ))  # fmt: skip


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("arch", ["llama", "bert"])
def test_lora_trains_only_adapters_and_head(project, arch, task):
    options = lora_options(project, arch, task)
    spec = get_task(task)
    plain, _, _ = build_model_and_optimizer(options.replace(lora=None), spec, 48)
    model, optimizer, _ = build_model_and_optimizer(options, spec, 48)
    trainable = {n: p.numel() for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(
        "lora_A" in n or "lora_B" in n or "modules_to_save" in n for n in trainable
    ), sorted(trainable)
    assert sum(trainable.values()) == expected_trainable(plain, LORA["r"])
    optimised = {id(p) for group in optimizer.param_groups for p in group["params"]}
    assert optimised == {id(p) for p in model.parameters() if p.requires_grad}
    # every linear layer of the encoder carries an adapter; the head none
    adapted = {n.rsplit(".lora_A", 1)[0] for n in trainable if ".lora_A." in n}
    assert len(adapted) == sum(isinstance(m, nn.Linear) for m in plain.base_model.modules())
    assert not any(part in n for n in adapted for part in ("classifier", "score"))


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("arch", ["llama", "bert"])
def test_a_kept_lora_model_reloads_with_peft_and_predicts_as_the_cell(project, arch, task):
    options = lora_options(project, arch, task)
    out = project / "cells" / arch / task / "seed1" / "result.json"
    data, encoded = project / f"data/{task}", project / f"enc/{task}"
    result = train_cell(options, encoded, data, out)
    assert result["status"] == "ok" and result["options"]["lora"] == {
        **LORA,
        "alpha": 4.0,
        "dropout": 0.0,
        "target_modules": "all-linear",
    }
    folder = out.parent / MODEL_DIR
    assert {p.name for p in folder.iterdir()} >= {"adapter_config.json", ADAPTER_WEIGHTS}
    assert not (folder / "model.safetensors").exists()  # adapter + head only
    card = (folder / "README.md").read_text()
    assert f'base_model: "{project / arch}"' in card and 'library_name: "peft"' in card

    # reloaded with peft alone: the base model the adapter config names, the kept labels
    spec = get_task(task)
    auto = AutoModelForTokenClassification if spec.kind.token_level else (
        AutoModelForSequenceClassification
    )  # fmt: skip
    adapter = PeftConfig.from_pretrained(folder)
    assert adapter.base_model_name_or_path == str(project / arch)
    base = auto.from_pretrained(
        adapter.base_model_name_or_path, config=AutoConfig.from_pretrained(folder)
    )
    model = PeftModel.from_pretrained(base, folder).eval()
    splits = Splits(spec, encoded, data)
    fmt = BatchFormat(load_meta(encoded)["pad_id"], label_dtype(spec), "BIO", False)
    ours = predict(model, spec, splits.encoded("dev"), 8, fmt)
    predictions = pd.read_parquet(out.parent / "predictions.parquet")
    cell_dev = [json.loads(p) for p in predictions[predictions["split"] == "dev"]["pred"]]
    assert json.loads(json.dumps(ours)) == cell_dev


def test_target_modules_name_the_encoders_linear_layers(project):
    options = lora_options(project, "llama", "gad", lora={"r": 2, "target_modules": ["q_proj"]})
    model, _, _ = build_model_and_optimizer(options, get_task("gad"), 48)
    adapted = {n for n, p in model.named_parameters() if p.requires_grad and "lora_A" in n}
    assert len(adapted) == 2 and all(".q_proj." in n for n in adapted)  # one per layer
    with pytest.raises(ValueError, match="query name no linear layer.*q_proj"):
        build_model_and_optimizer(
            options.replace(lora=options.lora.__class__(target_modules=("query",))),
            get_task("gad"),
            48,
        )
    plain = AutoModelForSequenceClassification.from_pretrained(project / "llama")
    assert {"q_proj", "k_proj", "v_proj", "o_proj"} <= set(encoder_linear_names(plain))


def test_options_without_lora_serialise_as_before():
    assert not {"lora", "gradient_checkpointing", "frozen_dtype"} & set(make_options().to_dict())
    given = make_options(lora={"r": 4}, gradient_checkpointing=True, frozen_dtype="bf16")
    assert CellOptions.from_dict(given.to_dict()) == given and hash(given)
    assert given.to_dict()["lora"]["target_modules"] == "all-linear"
    with pytest.raises(ConfigError, match="lora: unknown key"):
        make_options(lora={"rank": 4})


def test_lora_refuses_layer_surgery_when_the_config_is_read():
    config = {
        "models": {"m": {"hub_id": "org/m"}},
        "recipes": {"r": {"lora": {"r": 4}, "freeze_lower": 2}},
        "defaults": {},
    }
    with pytest.raises(ConfigError, match="recipes.r.lora: freeze_lower"):
        cell_options(config, "m", "gad", "r", 1e-4, 16)


def test_gradient_checkpointing_gives_the_same_first_step(project):
    options = lora_options(project, "llama", "gad", keep_model=False)
    losses = []
    for checkpointing in (False, True):
        torch.manual_seed(0)
        given = options.replace(gradient_checkpointing=checkpointing or None)
        model, _, _ = build_model_and_optimizer(given, get_task("gad"), 48)
        model.train()
        ids = torch.randint(5, 100, (4, 12))
        out = model(input_ids=ids, labels=torch.tensor([0, 1, 0, 1]))
        out.loss.backward()
        grads = [p.grad.clone() for p in model.parameters() if p.requires_grad]
        losses.append((out.loss.item(), grads))
    assert losses[0][0] == pytest.approx(losses[1][0])
    assert all(torch.allclose(a, b) for a, b in zip(losses[0][1], losses[1][1], strict=True))


def test_frozen_dtype_bf16_holds_the_frozen_weights_in_bf16_and_trains_in_fp32(project):
    """On a GPU (here a stand-in device: the CPU computes fp32): every frozen weight is bf16,
    the adapters and head stay fp32, and a mixed-precision step (autocast, as `precision: bf16`
    runs it; the CPU's autocast here) gives fp32 gradients to exactly the trained ones."""
    from types import SimpleNamespace

    from blurbflow.models.load import load_for_task
    from blurbflow.models.lora import apply_large_options

    options = lora_options(project, "llama", "gad", frozen_dtype="bf16")
    model = load_for_task(str(project / "llama"), get_task("gad"), 0.0)
    model = apply_large_options(model, options, False, SimpleNamespace(type="cuda"))
    dtypes = {p.requires_grad: set() for p in model.parameters()}
    for param in model.parameters():
        dtypes[param.requires_grad].add(param.dtype)
    assert dtypes == {False: {torch.bfloat16}, True: {torch.float32}}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(input_ids=torch.randint(5, 100, (2, 9)), labels=torch.tensor([0, 1]))
    out.loss.backward()
    for param in model.parameters():
        assert (param.grad is not None) == param.requires_grad
        assert param.grad is None or param.grad.dtype == torch.float32
    cpu = apply_large_options(
        load_for_task(str(project / "llama"), get_task("gad"), 0.0), options, False, None
    )
    assert {p.dtype for p in cpu.parameters()} == {torch.float32}  # the CPU: fp32 throughout
