"""Load tokenizers and models through transformers' Auto* classes, safely (DESIGN §10):
never `trust_remote_code`; safetensors preferred; `.bin` only through the weights_only loader."""

from __future__ import annotations

from pathlib import Path

from blurbflow.tasks import TaskSpec


def load_tokenizer(source: str, add_prefix_space: bool | None = None):
    from transformers import AutoConfig, AutoTokenizer

    if add_prefix_space is None:
        # RoBERTa's byte-level BPE needs a prefix space to tokenize pre-split words.
        add_prefix_space = AutoConfig.from_pretrained(source).model_type in ("roberta", "deberta")
    kwargs = {"add_prefix_space": True} if add_prefix_space else {}
    return AutoTokenizer.from_pretrained(source, trust_remote_code=False, **kwargs)


def _weights_kwargs(source: str) -> dict:
    # transformers loads .bin with torch.load(weights_only=True); say so explicitly for safety.
    folder = Path(source)
    if folder.is_dir() and not any(folder.glob("*.safetensors")) and any(folder.glob("*.bin")):
        return {"use_safetensors": False}
    return {}


def load_for_task(source: str, spec: TaskSpec, dropout: float = 0.1):
    """The pretrained encoder with a freshly initialised linear head for the task type."""
    from transformers import (
        AutoConfig,
        AutoModelForSequenceClassification,
        AutoModelForTokenClassification,
    )

    labels = list(spec.labels)
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
        elif spec.type not in ("ner", "pico"):
            config_kwargs["problem_type"] = "single_label_classification"
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the "newly initialised head" report is expected here
    config = AutoConfig.from_pretrained(source, trust_remote_code=False, **config_kwargs)
    auto = (
        AutoModelForTokenClassification
        if spec.type in ("ner", "pico")
        else (AutoModelForSequenceClassification)
    )
    return auto.from_pretrained(
        source, config=config, trust_remote_code=False, **_weights_kwargs(source)
    )
