"""Load tokenizers and models through transformers' Auto* classes, safely (DESIGN §10):
no `trust_remote_code` unless a model's config asks for it; safetensors preferred; `.bin` only
through torch's weights_only loader (transformers 5.23 `modeling_utils.load_state_dict` calls
`torch.load(..., weights_only=weights_only)`, True by default; `load_for_task` also passes
`weights_only=True` explicitly, so a pickle that would run code is refused, not executed)."""

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


def load_tokenizer(
    source: str,
    add_prefix_space: bool | None = None,
    entity_markers: bool = False,
    *,
    trust_remote_code: bool = False,
):
    """The tokenizer of `source` (a local folder or a hub id); `trust_remote_code` only when the
    model's config says so (per-model key, default false)."""
    from transformers import AutoConfig, AutoTokenizer

    if add_prefix_space is None:
        # RoBERTa's byte-level BPE needs a prefix space to tokenize pre-split words.
        config = AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
        add_prefix_space = config.model_type in ("roberta", "deberta")
    kwargs = {"add_prefix_space": True} if add_prefix_space else {}
    tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code, **kwargs)
    if entity_markers:
        add_entity_markers(tokenizer)
    return tokenizer


def _weights_kwargs(source: str) -> dict:
    # .bin only through torch.load(weights_only=True): transformers' default, stated explicitly.
    kwargs: dict = {"weights_only": True}
    folder = Path(source)
    if folder.is_dir() and not any(folder.glob("*.safetensors")) and any(folder.glob("*.bin")):
        kwargs["use_safetensors"] = False
    return kwargs


def load_for_task(
    source: str,
    spec: TaskSpec,
    dropout: float = 0.1,
    *,
    labels: tuple[str, ...] | None = None,
    head: str = "linear",
    pooling: str = "cls",
    num_tokens: int | None = None,
    trust_remote_code: bool = False,
):
    """The pretrained encoder with a freshly initialised head for the task type.

    `labels` overrides the task's label vocabulary (tagging schemes); `head`/`pooling` other
    than linear/cls give a `heads.TaskModel`, else transformers' own classification model
    (Gu's standard: BERT's pooled [CLS], ELECTRA's and RoBERTa's [CLS] heads); `num_tokens`
    grows the input embeddings to cover added tokens (entity markers); `trust_remote_code` only
    when the model's config says so."""
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
    config = AutoConfig.from_pretrained(
        source, trust_remote_code=trust_remote_code, **config_kwargs
    )
    custom = head != "linear" or pooling != "cls"
    if custom:
        auto = AutoModel
    elif token_level:
        auto = AutoModelForTokenClassification
    else:
        auto = AutoModelForSequenceClassification
    model = auto.from_pretrained(
        source, config=config, trust_remote_code=trust_remote_code, **_weights_kwargs(source)
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
