"""Load tokenizers and models through transformers' Auto* classes, safely (docs/reliability.md):
no `trust_remote_code` unless a model's config asks for it; safetensors preferred; `.bin` only
through torch's weights_only loader (transformers 5.23 `modeling_utils.load_state_dict` calls
`torch.load(..., weights_only=weights_only)`, True by default; `load_for_task` also passes
`weights_only=True` explicitly, so a pickle that would run code is refused, not executed)."""

from __future__ import annotations

from pathlib import Path

from blurbflow.models import attention
from blurbflow.models import pooling as poolings
from blurbflow.models.dropout import dropout_settings
from blurbflow.models.limits import DECODERS
from blurbflow.models.tokenizer import (  # noqa: F401  (re-exported: callers import from here)
    ENTITY_MARKERS,
    add_entity_markers,
    load_tokenizer,
    lowercases,
    tokenizer_settings,
)
from blurbflow.tasks import TaskSpec


def check_loaded(model, info: dict, source: str) -> None:
    """Only the task head (and a pooler some checkpoints do not ship) may be newly initialised:
    a missing or mis-shaped encoder weight (e.g. a key prefix that does not match the config)
    would fine-tune from random weights. ValueError listing the weights otherwise."""
    prefix = getattr(model, "base_model_prefix", "") or ""
    head_model = prefix and hasattr(model, prefix)  # keys of a *For* model start with prefix.

    def encoder(key: str) -> bool:
        if ".pooler." in f".{key}":
            return False
        return key.startswith(f"{prefix}.") if head_model else True

    new = sorted(k for k in info.get("missing_keys", ()) if encoder(k))
    new += sorted(str(k[0] if isinstance(k, tuple) else k) for k in info.get("mismatched_keys", ()))
    if new:
        unused = sorted(info.get("unexpected_keys", ()))
        shown = ", ".join(new[:12]) + (f" … ({len(new)} in all)" if len(new) > 12 else "")
        hint = (
            f"; the checkpoint has unused weights such as {', '.join(unused[:3])}" if unused else ""
        )
        raise ValueError(
            f"{source}: {len(new)} encoder weights are not in the checkpoint and would be "
            f"trained from random values: {shown}{hint}. The weights do not match the model's "
            "config.json (architecture or key prefix); fix the model folder or its config"
        )


def _weights_kwargs(source: str) -> dict:
    # .bin only through torch.load(weights_only=True): transformers' default, stated explicitly.
    kwargs: dict = {"weights_only": True}
    folder = Path(source)
    if folder.is_dir() and not any(folder.glob("*.safetensors")) and any(folder.glob("*.bin")):
        kwargs["use_safetensors"] = False
    return kwargs


def pretrained(
    auto,
    source: str,
    config,
    trust_remote_code: bool,
    num_tokens: int | None,
    info_out: dict | None = None,
):
    """`auto.from_pretrained` with every encoder weight checked as loaded, and the embeddings
    grown to `num_tokens` (added entity markers); `info_out` receives the loading info."""
    model, info = auto.from_pretrained(
        source,
        config=config,
        trust_remote_code=trust_remote_code,
        output_loading_info=True,
        **_weights_kwargs(source),
        **attention.load_kwargs(),
    )
    check_loaded(model, info, source)
    if info_out is not None:
        info_out.update(info)
    if num_tokens is not None and num_tokens > model.get_input_embeddings().num_embeddings:
        model.resize_token_embeddings(num_tokens)
    return model


def span_model(
    source: str, dropout: float, head: str, num_tokens: int | None, trust_remote_code: bool
):
    """Extractive QA: the pretrained `AutoModel` encoder under a fresh `blurbflow.qa.SpanHead`
    (the recipe's dropout in the encoder and before the head)."""
    from transformers import AutoConfig, AutoModel

    from blurbflow.qa.head import SpanModel

    if head != "linear":
        raise ValueError(
            f"head: {head!r} does not apply to extractive QA, whose span head is already one "
            "linear layer per token; use head: linear"
        )
    config = AutoConfig.from_pretrained(
        source,
        trust_remote_code=trust_remote_code,
        **dropout_settings(source, dropout, trust_remote_code),
    )
    encoder = pretrained(AutoModel, source, config, trust_remote_code, num_tokens)
    return SpanModel(encoder, dropout)


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
    sequence_pooling: str | None = None,
    untrained_pooler: bool = False,
):
    """The pretrained encoder with a freshly initialised head for the task type (ValueError for
    a head that reads a decoder's first token).

    `labels` overrides the task's label vocabulary (tagging schemes); `head: linear` with
    `pooling: cls` gives the architecture's own model (transformers' *ForSequenceClassification
    / *ForTokenClassification: BERT's pooled [CLS] and one linear layer; RoBERTa's, ELECTRA's
    and DeBERTa's sequence heads add a new dense layer before it), anything else a
    `heads.TaskModel`; `head: cls_linear` is exactly one new linear layer (Gu et al. 2021's
    "linear layer"; `cls_linear_encoder` reads BERT's pretrained pooler); `num_tokens`
    grows the input embeddings to cover added tokens (entity markers); `trust_remote_code` only
    when the model's config says so; `sequence_pooling` (`cls`, `mean`; recipe option `pooling`)
    overrides the architecture's own pooling where `pooling` is `cls` (blurbflow.models.pooling);
    `untrained_pooler` (the model entry's): the checkpoint's pooler was never trained, so no
    sequence head reads it: `linear` becomes one linear layer on the [CLS] state, as `cls_linear`
    (a TaskModel without the pooler)."""
    from transformers import (
        AutoConfig,
        AutoModel,
        AutoModelForSequenceClassification,
        AutoModelForTokenClassification,
    )

    if spec.kind.target == "span":  # extractive QA: the encoder under a span head
        return span_model(source, dropout, head, num_tokens, trust_remote_code)
    token_level, problem_type = spec.kind.token_level, spec.kind.problem_type
    labels = list(spec.labels if labels is None else labels)
    config_kwargs = dropout_settings(source, dropout, trust_remote_code)
    if problem_type == "regression":
        config_kwargs.update(num_labels=1, problem_type=problem_type)
    else:
        config_kwargs.update(
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={label: i for i, label in enumerate(labels)},
        )
        if problem_type:  # token classification has none
            config_kwargs["problem_type"] = problem_type
    config = AutoConfig.from_pretrained(
        source, trust_remote_code=trust_remote_code, **config_kwargs
    )
    if token_level or pooling != "cls":  # token tasks, entity pooling: nothing to pool at [CLS]
        sequence_pooling = None
    first_token = head == "cls_linear" and sequence_pooling != "mean" or sequence_pooling == "cls"
    if first_token and not token_level and pooling == "cls" and config.model_type in DECODERS:
        raise ValueError(  # also refused when the config is read, once the files are there
            f"{source}: a {config.model_type} decoder's first token sees only itself; use "
            "`pooling: mean`, or `head: linear` without `pooling` (its own head reads the last "
            "real token)"
        )
    poolings.configure(config, sequence_pooling)
    mean = sequence_pooling == "mean"
    custom = head != "linear" or pooling != "cls"
    custom = custom or poolings.needs_task_model(config, sequence_pooling)
    # the architecture's own head would read a pooler that pretraining never trained
    reads_pooler = poolings.own_head_reads(config) == "pooler"
    skip_pooler = untrained_pooler and not token_level and reads_pooler
    custom = custom or skip_pooler
    if custom:
        auto = AutoModel
    elif token_level:
        auto = AutoModelForTokenClassification
    else:
        auto = AutoModelForSequenceClassification
    info: dict = {}
    model = pretrained(auto, source, config, trust_remote_code, num_tokens, info)
    if not custom:
        return model
    from blurbflow.models.heads import TaskModel

    use_pooler = False
    if head == "cls_linear":
        pooled = not token_level and pooling == "cls" and not mean and not untrained_pooler
        use_pooler = cls_linear_encoder(model, info, pooled=pooled)
    elif untrained_pooler and getattr(model, "pooler", None) is not None:
        model.pooler = None  # never read: not a parameter to train
    return TaskModel(
        model,
        token_level=token_level,
        num_labels=config.num_labels,
        problem_type=config.problem_type,
        head=head,
        pooling="mean" if mean else pooling,
        dropout=dropout,
        use_pooler=use_pooler,
    )


# Architectures whose pretraining trains the pooler over [CLS] (next-sentence or sentence-order
# prediction). A RoBERTa or ELECTRA checkpoint may hold pooler weights too (saved from a bare
# `RobertaModel`), but those were never trained: `cls_linear` does not read them. A BERT
# checkpoint pretrained without such an objective (BioM-BERT-L: ELECTRA's code, no NSP) says so
# with the model entry's `untrained_pooler` (`load_for_task`).
POOLER_PRETRAINED = ("bert", "albert", "megatron-bert")


def has_pretrained_pooler(encoder, info: dict) -> bool:
    """Whether the `AutoModel` encoder has a pooler that pretraining trained (its architecture
    in POOLER_PRETRAINED) and whose weights the checkpoint held (not a new one)."""
    if getattr(encoder, "pooler", None) is None:
        return False
    if getattr(encoder.config, "model_type", None) not in POOLER_PRETRAINED:
        return False
    return not any(".pooler." in f".{key}" for key in info.get("missing_keys", ()))


def cls_linear_encoder(encoder, info: dict, pooled: bool) -> bool:
    """`head: cls_linear`: whether the head reads the encoder's pretrained pooler (`pooled`:
    a sequence task with [CLS] pooling, and `has_pretrained_pooler`). A pooler
    that is not read is removed (RoBERTa's AutoModel adds one the checkpoint lacks), so the
    classifier's weight and bias are the only newly initialised parameters."""
    use = pooled and has_pretrained_pooler(encoder, info)
    if not use and getattr(encoder, "pooler", None) is not None:
        encoder.pooler = None
    return use
