"""Settings a model cannot take, found before any job runs: an input length beyond the model's
position embeddings would tokenize fine and then fail in the first forward pass ("The expanded
size of the tensor (1024) must match the existing size (512)"). Checked where the workflow
plans (blurbflow.config.check_max_length), for every model whose files are already there (a
local folder, a prefetched hub snapshot), and again by the tokenize step, for models built or
fetched since."""

from __future__ import annotations

import json
from pathlib import Path

from blurbflow.errors import ConfigError
from blurbflow.models.archive import is_url
from blurbflow.models.prefetch import hub_cache, is_local, marker_path, model_folder
from blurbflow.options import ModelOptions

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


def available_limit(model: ModelOptions) -> int | None:
    """The model's limit if its files are there now, else None (checked again later). A hub
    model counts as there once `prefetch` wrote its marker (no hub library call before); a URL
    model once its archive is unpacked (model_folder says so without the hub library)."""
    if not is_local(model) and not is_url(model.model_source):
        marker = marker_path(hub_cache(), model.model_source, model.revision or None)
        if not marker.is_file():
            return None
    try:
        return position_limit(model_folder(model))
    except (ValueError, OSError):  # not built or not prefetched yet
        return None


def check_input_length(model: ModelOptions, max_length: int) -> None:
    """The tokenize step's check, for models whose files appeared after planning."""
    limit = available_limit(model)
    if limit is not None and max_length > limit:
        raise ConfigError(
            f"max_length {max_length} is more than model {model.model!r} takes ({limit} "
            f"positions, its config.json); lower the task's or recipe's max_length to at most "
            f"{limit}"
        )
