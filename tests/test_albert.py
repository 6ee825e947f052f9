"""ALBERT: a checkpoint folder that ships only a SentencePiece model (`spiece.model`, no
tokenizer.json, as ALBERT checkpoints on the hub do) loads through blurbflow's loader as a fast
tokenizer that agrees with SentencePiece itself; its encoder fine-tunes with a recipe without
layer surgery; layer surgery on its shared layers is refused with the reason."""

from __future__ import annotations

import io

import pytest
import torch

from blurbflow.models import spm
from blurbflow.models.load import load_for_task, load_tokenizer, lowercases
from blurbflow.models.surgery import (
    UnsupportedLayout,
    freeze_lower,
    parameter_groups,
    reinit_top,
    remove_top,
)
from blurbflow.qa import make_windows
from blurbflow.tasks import get_task

from model_helpers import make_options

TEXTS = [
    "Mutations in the receptor cause fibrosis.",
    "The kinase inhibits the receptor in vitro.",
    "The factor is highly expressed in T cells.",
    "Samples were collected before and after treatment.",
]


def _corpus(folder) -> list[str]:
    """Varied biomedical-looking sentences: the generated SQuAD contexts."""
    from blurbflow.data.generate import squad as squad_generator
    from blurbflow.data.parsers.squad import read_squad

    squad_generator.generate(folder, seed=0, version="1.1")
    return [e["context"].lower() for e in read_squad(folder / "train-v1.1.json")] + TEXTS


@pytest.fixture(scope="module")
def albert_folder(tmp_path_factory):
    """config.json + model.safetensors + spiece.model, ALBERT's special ids 0-4."""
    import sentencepiece
    from transformers import AlbertConfig, AlbertForMaskedLM

    folder = tmp_path_factory.mktemp("albert")
    model_file = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(_corpus(tmp_path_factory.mktemp("corpus"))),
        model_writer=model_file,
        vocab_size=400,
        model_type="unigram",
        character_coverage=1.0,
        pad_id=0,
        unk_id=1,
        bos_id=2,
        eos_id=3,
        pad_piece="<pad>",
        unk_piece="<unk>",
        bos_piece="[CLS]",
        eos_piece="[SEP]",
        user_defined_symbols=["[MASK]"],
        minloglevel=2,
    )
    (folder / "spiece.model").write_bytes(model_file.getvalue())
    size = sentencepiece.SentencePieceProcessor(model_proto=model_file.getvalue()).get_piece_size()
    torch.manual_seed(0)
    config = AlbertConfig(
        vocab_size=size,
        embedding_size=8,
        hidden_size=16,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    AlbertForMaskedLM(config).save_pretrained(folder)
    return folder


def test_sentencepiece_only_folder_loads_as_a_fast_tokenizer(albert_folder, tmp_path):
    import sentencepiece

    assert not (albert_folder / "tokenizer.json").exists()
    tokenizer = load_tokenizer(albert_folder)
    assert tokenizer.is_fast and "Albert" in type(tokenizer).__name__
    assert lowercases(tokenizer)  # ALBERT's default: do_lower_case
    processor = sentencepiece.SentencePieceProcessor(model_file=str(albert_folder / "spiece.model"))
    text = "Mutations in the Receptor cause fibrosis; it is highly expressed in T cells."
    pieces = processor.encode(text.lower())
    assert len(pieces) < len(text) / 2  # word pieces, not characters
    assert tokenizer(text)["input_ids"] == [2, *pieces, 3]
    pair = tokenizer("what does it inhibit?", TEXTS[1], return_offsets_mapping=True)
    assert pair["input_ids"].count(3) == 2 and pair["offset_mapping"][1] != (0, 0)
    # extractive QA windows work on it (the answer's pieces map back to its characters)
    example = {
        "id": "q",
        "question": "what does the kinase inhibit?",
        "context": TEXTS[1],
        "answer_texts": ["the receptor"],
        "answer_starts": [20],
        "is_impossible": False,
    }
    windows = make_windows(tokenizer, [example], 64, 8, 16)
    assert len(windows) == 1
    offsets = windows.offsets[0]
    span = (offsets[windows.start_positions[0]][0], offsets[windows.end_positions[0]][1])
    assert TEXTS[1][span[0] : span[1]].strip() == "the receptor"
    # saved as transformers writes it (tokenizer.json), it loads back the same
    tokenizer.save_pretrained(tmp_path)
    (tmp_path / "config.json").write_bytes((albert_folder / "config.json").read_bytes())
    assert (tmp_path / "tokenizer.json").exists()
    assert load_tokenizer(tmp_path)(text)["input_ids"] == [2, *pieces, 3]


def test_missing_sentencepiece_says_what_to_install(albert_folder, monkeypatch):
    monkeypatch.setattr(spm, "importable", lambda module: module != "sentencepiece")
    with pytest.raises(ValueError, match=r"spiece.model.*install sentencepiece \(blurbflow"):
        load_tokenizer(albert_folder)


def test_albert_fine_tunes_without_layer_surgery(albert_folder):
    tokenizer = load_tokenizer(albert_folder)
    spec = get_task("pubmedqa")
    model = load_for_task(str(albert_folder), spec, dropout=0.0)
    assert model.config.hidden_dropout_prob == 0.0 and model.config.num_labels == 3
    batch = tokenizer(["what does it inhibit?"] * 4, TEXTS, padding=True, return_tensors="pt")
    labels = torch.tensor([0, 1, 2, 1])
    # a recipe without surgery: the cell calls every step with 0 / None, which must pass
    assert freeze_lower(model, 0) == 0 and freeze_lower(model, None) == 0
    remove_top(model, 0)
    reinit_top(model, 0, seed=0)
    groups = parameter_groups(model, 1e-2, 0.01, decay=None)
    optimizer = torch.optim.AdamW(groups)
    losses = []
    for _ in range(15):
        loss = model(**batch, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    ner = load_for_task(str(albert_folder), get_task("bc5chem"), dropout=0.1)
    assert ner(**tokenizer(TEXTS[:2], padding=True, return_tensors="pt")).logits.shape[-1] == 3


@pytest.mark.parametrize(
    "surgery",
    [
        lambda m: freeze_lower(m, 1),
        lambda m: freeze_lower(m, "half"),
        lambda m: reinit_top(m, 1, seed=0),
        lambda m: remove_top(m, 1),
        lambda m: parameter_groups(m, 1e-3, 0.01, decay=0.9),
    ],
    ids=["freeze_lower", "freeze_half", "reinit_top", "remove_top", "layerwise_lr_decay"],
)
def test_surgery_on_shared_layers_is_refused_with_the_reason(albert_folder, surgery):
    model = load_for_task(str(albert_folder), get_task("bc5chem"))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    with pytest.raises(UnsupportedLayout) as caught:
        surgery(model)
    message = str(caught.value)
    assert "shares its layer weights across depths" in message
    assert "3 layers computed by 1 shared layer group" in message
    assert "would hit every depth at once" in message and "remove_top" in message
    assert model.config.num_hidden_layers == 3
    for name, param in model.named_parameters():  # nothing was changed before refusing
        assert param.requires_grad and torch.equal(param, before[name])


def test_an_albert_cell_runs_and_surgery_recipes_stop_it(albert_folder, tmp_path):
    """A whole cell (blurbflow.train.cell) on the ALBERT folder: a recipe without surgery
    finishes with metrics; one with reinit_top stops before training with the reason."""
    import pandas as pd

    from blurbflow.data.generate import generate_source
    from blurbflow.data.prepare import prepare_task
    from blurbflow.options import InputOptions
    from blurbflow.train.cell import train_cell
    from blurbflow.train.encode import encode_task

    generate_source("gad", tmp_path / "raw/gad")
    prepare_task("gad", tmp_path / "raw", tmp_path / "data/gad")
    small = tmp_path / "data/small"
    small.mkdir()
    for split, n in (("train", 64), ("dev", 32), ("test", 32)):
        frame = pd.read_parquet(tmp_path / f"data/gad/{split}.parquet").head(n)
        frame.to_parquet(small / f"{split}.parquet")
    tokenizer = load_tokenizer(albert_folder)
    encode_task(
        get_task("gad"), small, tokenizer, InputOptions(max_length=64), tmp_path / "encoded"
    )
    options = make_options(
        model="albert",
        model_source=str(albert_folder),
        recipe="standard",
        lr=1e-3,
        batch_size=16,
        epochs=1,
        max_length=64,
        seed=1,
    )
    result = train_cell(options, tmp_path / "encoded", small, tmp_path / "cells/a/result.json")
    assert result["status"] == "ok" and len(result["epochs"]) == 1
    assert result["metric"] == "positive_f1" and 0.0 <= result["test"] <= 100.0
    assert result["error"] is None and result["train_instances"] == 64
    with pytest.raises(UnsupportedLayout, match="shares its layer weights"):
        train_cell(
            options.replace(reinit_top=1),
            tmp_path / "encoded",
            small,
            tmp_path / "cells/b/result.json",
        )
