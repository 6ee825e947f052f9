"""Build the demo's own small in-domain model, offline: a WordPiece vocabulary trained on the
demo corpus and a tiny BERT pre-trained briefly with masked-LM on that corpus (the BLURB idea —
in-domain vocabulary and pre-training — at toy scale)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from pathlib import Path

import pandas as pd

from blurbflow.util.artefacts import write_record

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TEXT_COLUMNS = ("text", "text_a", "text_b", "question", "context")


def corpus_texts(parquet_files: Iterable[Path]) -> Iterator[str]:
    """Every text of the prepared training sets, whatever their task type."""
    for path in parquet_files:
        frame = pd.read_parquet(path)
        if "tokens" in frame:
            yield from (" ".join(tokens) for tokens in frame["tokens"])
        for column in TEXT_COLUMNS:
            if column in frame:
                yield from frame[column].astype(str)


def train_tokenizer(texts: list[str], vocab_size: int):
    """An uncased BERT WordPiece tokenizer trained with the `tokenizers` library."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    normalizer = normalizers.BertNormalizer(lowercase=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # The trainer numbers "##x" pieces in hash-map order and breaks merge ties by number, so the
    # vocabulary changes from run to run (huggingface/tokenizers#1794). Declaring every "##x"
    # up front numbers them in sorted order: the same corpus gives the same vocabulary.
    words = (
        w for t in texts for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(t))
    )
    pieces = [f"##{c}" for c in sorted({c for word in words for c in word})]
    trained = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    trained.normalizer, trained.pre_tokenizer = normalizer, pre_tokenizer
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS + pieces
    )
    trained.train_from_iterator(texts, trainer)
    # a fresh tokenizer over the same vocabulary, where only the real special tokens are special
    tokenizer = Tokenizer(models.WordPiece(trained.get_vocab(), unk_token="[UNK]"))
    tokenizer.normalizer, tokenizer.pre_tokenizer = normalizer, pre_tokenizer
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.add_special_tokens(SPECIAL_TOKENS)
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    # transformers 5 ignores vocab_file= on BertTokenizerFast; pass the trained object instead.
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
    )


def pretrain_mlm(model, tokenizer, texts: list[str], epochs: int, seed: int, batch_size: int = 64):
    """A short masked-LM pass over the corpus (15% masking, as BERT)."""
    import torch
    from transformers import DataCollatorForLanguageModeling

    if epochs <= 0:
        return model
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
    rng = random.Random(seed)
    model.train()
    for _ in range(epochs):
        order = list(range(len(texts)))
        rng.shuffle(order)
        for start in range(0, len(order), batch_size):
            batch = [texts[i] for i in order[start : start + batch_size]]
            encoded = tokenizer(batch, truncation=True, max_length=64)
            features = collator([{"input_ids": ids} for ids in encoded["input_ids"]])
            loss = model(input_ids=features["input_ids"], labels=features["labels"]).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
    return model


def build_demo_model(
    corpus: list[Path],
    out_dir: Path,
    hidden_size: int = 64,
    num_layers: int = 2,
    pretrain_epochs: int = 1,
    vocab_size: int = 4000,
    seed: int = 0,
) -> dict:
    """Write a tokenizer and a safetensors BERT to `out_dir`; returns a summary."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    texts = [t for t in corpus_texts(corpus) if t.strip()]
    if not texts:
        raise ValueError(f"the demo corpus is empty: {[str(p) for p in corpus]}")
    tokenizer = train_tokenizer(texts, vocab_size)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=max(1, hidden_size // 32),
        intermediate_size=hidden_size * 4,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = pretrain_mlm(BertForMaskedLM(config), tokenizer, texts, pretrain_epochs, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    write_record(out_dir, "model")  # what readers verify before use (blurbflow.util.artefacts)
    return {"texts": len(texts), "vocab_size": len(tokenizer), "parameters": model.num_parameters()}
