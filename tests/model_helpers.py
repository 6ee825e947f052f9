"""A tiny BERT built here (WordPiece vocabulary trained with `tokenizers`), for tests that need a
real model folder without any download."""

from __future__ import annotations

import torch


def tiny_bert(texts: list[str], vocab_size: int, layers: int = 1):
    """(model, config, tokenizer) of a 16-wide BERT with 64 positions, seeded."""
    from transformers import BertConfig, BertModel

    from blurbflow.models.build import train_tokenizer

    torch.manual_seed(0)
    tokenizer = train_tokenizer(texts, vocab_size)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    return BertModel(config), config, tokenizer
