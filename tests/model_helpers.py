"""Tiny BERTs built here (WordPiece vocabulary trained with `tokenizers`), for tests that need a
real model or model folder without any download. Every tiny BERT of the tests comes from here,
and so do the hand-made cell options (`make_options`) that train on them."""

from __future__ import annotations

import torch
from transformers import BertConfig, BertForSequenceClassification, BertModel

from blurbflow.models.build import train_tokenizer
from blurbflow.options import CellOptions


def tiny_config(vocab_size: int, layers: int = 1, **overrides) -> BertConfig:
    """A 16-wide BERT config (2 heads, 64 positions unless overridden)."""
    sizes = {
        "hidden_size": 16,
        "num_attention_heads": 2,
        "intermediate_size": 32,
        "max_position_embeddings": 64,
    }
    return BertConfig(vocab_size=vocab_size, num_hidden_layers=layers, **{**sizes, **overrides})


def tiny_bert(texts: list[str], vocab_size: int, layers: int = 1):
    """(model, config, tokenizer) of a seeded tiny BertModel with a vocabulary trained on
    `texts`."""
    torch.manual_seed(0)
    tokenizer = train_tokenizer(texts, vocab_size)
    config = tiny_config(len(tokenizer), layers)
    return BertModel(config), config, tokenizer


def tiny_classifier(layers: int = 4) -> BertForSequenceClassification:
    """A seeded tiny two-class sequence classifier over 50 token ids (512 positions)."""
    torch.manual_seed(0)
    config = tiny_config(50, layers, num_labels=2, max_position_embeddings=512)
    return BertForSequenceClassification(config)


def make_options(**overrides) -> CellOptions:
    """A cell's options as the config would build them: a `tiny` model in folder `tiny`, GAD,
    recipe `r`, hparams `h`, max_length 128 and the recipe defaults, overridden by `overrides`
    (the flat serialised keys: `max_length`, `tagging` … at top level, `init_from` a dict)."""
    given = {
        "model": "tiny",
        "model_source": "tiny",
        "task": "gad",
        "recipe": "r",
        "hparams": "h",
        "max_length": 128,
        **overrides,
    }
    return CellOptions.from_dict(given, where="make_options")


def small_gad_project(root, sizes: tuple[int, int, int]):
    """GAD generated, prepared, cut to (train, dev, test) instances, a 32-wide demo BERT built on
    it and the cut data encoded at max_length 128: `root/model`, `root/data/small`,
    `root/encoded` (the cell tests' project)."""
    import pandas as pd

    from blurbflow.data.generate import generate_source
    from blurbflow.data.prepare import prepare_task
    from blurbflow.models.build import build_demo_model
    from blurbflow.models.load import load_tokenizer
    from blurbflow.options import InputOptions
    from blurbflow.tasks import get_task
    from blurbflow.train.encode import encode_task

    generate_source("gad", root / "raw/gad")
    prepare_task("gad", root / "raw", root / "data/gad")
    small = root / "data/small"
    small.mkdir()
    for split, n in zip(("train", "dev", "test"), sizes, strict=True):
        frame = pd.read_parquet(root / f"data/gad/{split}.parquet").head(n)
        frame.to_parquet(small / f"{split}.parquet")
    build_demo_model(
        [small / "train.parquet"], root / "model", hidden_size=32, pretrain_epochs=0, vocab_size=600
    )
    tokenizer = load_tokenizer(str(root / "model"))
    encode_task(get_task("gad"), small, tokenizer, InputOptions(max_length=128), root / "encoded")
    return root
