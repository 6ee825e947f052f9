"""Which token states a sequence-level head reads (recipe option `pooling`), stated rather than
left to the architecture: transformers' own heads differ (BERT and ALBERT read [CLS] through
their pretrained pooler; RoBERTa, ELECTRA and DeBERTa the raw [CLS] state under a new dense
layer; ModernBERT as its config's `classifier_pooling` says (`mean` in answerdotai's
checkpoints, `cls` in transformers' default config); decoders such as
Llama read the last real token). `pooling: cls` or `mean` overrides that: ModernBERT through
its `classifier_pooling`, an architecture whose own head reads the other way through
blurbflow's TaskModel (one linear layer on the pooled state). result.json's `pooling` records
what the head read: `pooler`, `cls`, `mean`, `last`, an entity pooling of relation tasks
(`max`, `mention`, `entity_start`), or null (token tasks, extractive QA)."""

from __future__ import annotations

# Architectures whose own sequence head reads the [CLS] state (BERT's through its pooler).
POOLER_HEADS = ("bert", "albert", "megatron-bert")
CLS_HEADS = (*POOLER_HEADS, "roberta", "xlm-roberta", "electra", "deberta", "deberta-v2")
OWN_SETTING = {"modernbert": "classifier_pooling"}  # a config setting that picks the pooling


def own_head_reads(config) -> str:
    """What the architecture's own *ForSequenceClassification head pools."""
    model_type = getattr(config, "model_type", None)
    if model_type in POOLER_HEADS:
        return "pooler"
    if model_type in OWN_SETTING:
        return str(getattr(config, OWN_SETTING[model_type], "cls"))
    return "cls" if model_type in CLS_HEADS else "last"


def needs_task_model(config, pooling: str | None) -> bool:
    """Whether `pooling` asks what the architecture's own head cannot do (after `configure`)."""
    if pooling is None or getattr(config, "model_type", None) in OWN_SETTING:
        return False
    return {"pooler": "cls"}.get(own_head_reads(config), own_head_reads(config)) != pooling


def configure(config, pooling: str | None) -> None:
    """Set an architecture's own pooling setting (ModernBERT's `classifier_pooling`)."""
    setting = OWN_SETTING.get(getattr(config, "model_type", None))
    if pooling is not None and setting:
        setattr(config, setting, pooling)


def pooling_used(model, token_level: bool, span: bool = False) -> str | None:
    """What the loaded model's head reads, for result.json."""
    if token_level or span:
        return None
    if hasattr(model, "use_pooler"):  # blurbflow.models.heads.TaskModel
        if model.use_pooler:
            return "pooler"
        return "mean" if model.head == "bilstm" and model.pooling == "cls" else model.pooling
    return own_head_reads(model.config)
