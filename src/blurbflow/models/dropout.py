"""A recipe's dropout, set on every config field that carries the encoder's dropout."""

from __future__ import annotations

# Dropout fields per architecture family: BERT, RoBERTa, ELECTRA, DeBERTa, ALBERT use the first
# two; DistilBERT and BART `dropout`/`attention_dropout`; T5 `dropout_rate`; GPT-2 the `*_pdrop`.
DROPOUT_FIELDS = (
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "dropout",
    "attention_dropout",
    "dropout_rate",
    "resid_pdrop",
    "embd_pdrop",
    "attn_pdrop",
)


def dropout_settings(source: str, dropout: float, trust_remote_code: bool = False) -> dict:
    """The config fields that carry the encoder's dropout, all set to `dropout`; ValueError
    when the architecture has none of them (the recipe's dropout would be silently ignored)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
    present = config.to_dict()
    fields = {name: dropout for name in DROPOUT_FIELDS if name in present}
    if not fields:
        raise ValueError(
            f"{source}: dropout={dropout} reaches no field of its {type(config).__name__} "
            f"(model_type {config.model_type!r}; known: {', '.join(DROPOUT_FIELDS)}); add the "
            "architecture's dropout fields to blurbflow.models.dropout.DROPOUT_FIELDS"
        )
    return fields
