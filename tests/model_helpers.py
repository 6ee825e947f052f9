"""Tiny BERTs built here (WordPiece vocabulary trained with `tokenizers`), for tests that need a
real model or model folder without any download. Every tiny BERT of the tests comes from here."""

from __future__ import annotations

import torch
from transformers import BertConfig, BertForSequenceClassification, BertModel

from blurbflow.models.build import train_tokenizer


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
