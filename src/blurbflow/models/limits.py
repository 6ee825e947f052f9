"""Settings a model cannot take, found before any job runs: an input length beyond the model's
position embeddings would tokenize fine and then fail in the first forward pass ("The expanded
size of the tensor (1024) must match the existing size (512)"). Checked where the workflow
plans (blurbflow.config.check_max_length), for every model whose files are already there (a
local folder, a prefetched hub snapshot), and again by the tokenize step, for models built or
fetched since."""

from __future__ import annotations

import json
from pathlib import Path

from blurbflow.models.archive import is_url
from blurbflow.models.prefetch import hub_cache, is_local, marker_path, model_folder
from blurbflow.options import ModelOptions
from blurbflow.util.errors import ConfigError

# Position ids start after the padding id in these architectures (RoBERTa: 514 embeddings, 512
# usable positions).
OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert", "longformer")


def position_limit(folder: str | Path) -> int | None:
    """The longest input the model in `folder` takes (None when its config does not say)."""
    try:
        config = json.loads((Path(folder) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    positions = config.get("max_position_embeddings")
    if not isinstance(positions, int):
        return None
    if config.get("model_type") in OFFSET_POSITIONS:
        positions -= int(config.get("pad_token_id") or 0) + 1
    return positions


def available_folder(model: ModelOptions) -> Path | None:
    """The model's folder if its files are there now, else None (checked again later). A hub
    model counts as there once `prefetch` wrote its marker (no hub library call before); a URL
    model once its archive is unpacked (model_folder says so without the hub library)."""
    if not is_local(model) and not is_url(model.model_source):
        marker = marker_path(hub_cache(), model.model_source, model.revision or None)
        if not marker.is_file():
            return None
    try:
        return Path(model_folder(model))
    except (ValueError, OSError):  # not built or not prefetched yet
        return None


def available_limit(model: ModelOptions) -> int | None:
    """The model's position limit if its files are there now (available_folder), else None."""
    folder = available_folder(model)
    return None if folder is None else position_limit(folder)


def check_input_length(model: ModelOptions, max_length: int) -> None:
    """The tokenize step's check, for models whose files appeared after planning."""
    limit = available_limit(model)
    if limit is not None and max_length > limit:
        raise ConfigError(
            f"max_length {max_length} is more than model {model.model!r} takes ({limit} "
            f"positions, its config.json); lower the task's or recipe's max_length to at most "
            f"{limit}"
        )


# Decoder-only architectures: causal attention lets the first token see only itself, so a head
# reading it learns nothing of the input (their own classifiers read the last real token).
DECODERS = (
    "llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi", "phi3",
    "gpt2", "gpt_neox", "falcon", "olmo", "olmo2",
)  # fmt: skip


def model_type(folder: str | Path | None) -> str | None:
    if folder is None:
        return None
    try:
        return json.loads((Path(folder) / "config.json").read_text()).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None


def reads_first_token(options) -> bool:
    """Whether a cell's head reads the first token's state (CellOptions: a sequence-level task
    under `head: cls_linear`, or `pooling: cls`, with [CLS] as its RE feature)."""
    from blurbflow.tasks import get_task

    kind = get_task(options.task).kind
    if kind.token_level or kind.target == "span" or options.pooling == "mean":
        return False
    return (
        options.head == "cls_linear" or options.pooling == "cls"
    ) and options.re_pooling == "cls"


def first_token_problem(options, kind: str | None) -> str | None:
    """Why a cell of a decoder cannot read its first token (None: it can). `kind`: the model's
    `model_type` (None: its files are not there yet, and the load checks again)."""
    if kind not in DECODERS or not reads_first_token(options):
        return None
    return (
        f"model {options.model!r} is a decoder ({kind}): its first token sees only itself, so "
        "a head reading it learns nothing; use `pooling: mean`, or `head: linear` without "
        "`pooling` (the architecture's own head reads the last real token)"
    )
