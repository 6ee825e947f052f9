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
