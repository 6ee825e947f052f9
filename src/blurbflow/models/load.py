"""Load tokenizers and models through transformers' Auto* classes, safely (DESIGN §10):
never `trust_remote_code`; safetensors preferred; `.bin` only through the weights_only loader."""

from __future__ import annotations

from pathlib import Path

from blurbflow.tasks import TaskSpec

# Entity markers of `re_input: markers`, added as special tokens in this order, so that the
# tokenizer at tokenize time and the model's embeddings at load time agree on their ids.
ENTITY_MARKERS = ("[E1]", "[/E1]", "[E2]", "[/E2]")


def add_entity_markers(tokenizer) -> dict[str, int]:
    """Add the entity markers as special tokens (idempotent, deterministic); their ids."""
    missing = [m for m in ENTITY_MARKERS if m not in tokenizer.get_vocab()]
    if missing:
        tokenizer.add_special_tokens(
            {"additional_special_tokens": missing}, replace_extra_special_tokens=False
        )
    return {m: tokenizer.convert_tokens_to_ids(m) for m in ENTITY_MARKERS}


def load_tokenizer(source: str, add_prefix_space: bool | None = None, entity_markers: bool = False):
    from transformers import AutoConfig, AutoTokenizer

    if add_prefix_space is None:
        # RoBERTa's byte-level BPE needs a prefix space to tokenize pre-split words.
        add_prefix_space = AutoConfig.from_pretrained(source).model_type in ("roberta", "deberta")
    kwargs = {"add_prefix_space": True} if add_prefix_space else {}
    tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False, **kwargs)
    if entity_markers:
        add_entity_markers(tokenizer)
    return tokenizer


def _weights_kwargs(source: str) -> dict:
    # transformers loads .bin with torch.load(weights_only=True); say so explicitly for safety.
    folder = Path(source)
    if folder.is_dir() and not any(folder.glob("*.safetensors")) and any(folder.glob("*.bin")):
        return {"use_safetensors": False}
    return {}


def load_for_task(
    source: str,
    spec: TaskSpec,
    dropout: float = 0.1,
    *,
    labels: tuple[str, ...] | None = None,
    head: str = "linear",
    pooling: str = "cls",
    num_tokens: int | None = None,
):
    """The pretrained encoder with a freshly initialised head for the task type.

    `labels` overrides the task's label vocabulary (tagging schemes); `head`/`pooling` other
    than linear/cls give a `heads.TaskModel`, else transformers' own classification model
    (Gu's standard: BERT's pooled [CLS], ELECTRA's and RoBERTa's [CLS] heads); `num_tokens`
    grows the input embeddings to cover added tokens (entity markers)."""
    from transformers import (
        AutoConfig,
        AutoModel,
        AutoModelForSequenceClassification,
        AutoModelForTokenClassification,
    )

    token_level = spec.type in ("ner", "pico")
    labels = list(spec.labels if labels is None else labels)
    config_kwargs = {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout}
    if spec.type == "sts":
        config_kwargs.update(num_labels=1, problem_type="regression")
    else:
        config_kwargs.update(
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={label: i for i, label in enumerate(labels)},
        )
        if spec.type == "doccls":
            config_kwargs["problem_type"] = "multi_label_classification"
        elif not token_level:
            config_kwargs["problem_type"] = "single_label_classification"
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the "newly initialised head" report is expected here
    config = AutoConfig.from_pretrained(source, trust_remote_code=False, **config_kwargs)
    custom = head != "linear" or pooling != "cls"
    if custom:
        auto = AutoModel
    elif token_level:
        auto = AutoModelForTokenClassification
    else:
        auto = AutoModelForSequenceClassification
    model = auto.from_pretrained(
        source, config=config, trust_remote_code=False, **_weights_kwargs(source)
    )
    if num_tokens is not None and num_tokens > model.get_input_embeddings().num_embeddings:
        model.resize_token_embeddings(num_tokens)
    if not custom:
        return model
    from blurbflow.models.heads import TaskModel

    return TaskModel(
        model,
        token_level=token_level,
        num_labels=config.num_labels,
        problem_type=config.problem_type,
        head=head,
        pooling=pooling,
        dropout=dropout,
    )
