"""The torch half of `init_from` (blurbflow.config.init_from plans, this saves and loads): a source
cell's fine-tuned state dict and the type-agnostic loading of it into a dependant's model."""

from __future__ import annotations

from pathlib import Path

import torch

from blurbflow.config.identity import file_sha256
from blurbflow.config.init_from import WEIGHTS
from blurbflow.util.io import atomic_path


def save_weights(model, cell_dir: Path) -> str:
    """`seed{N}/weights.pt`: the model's state dict (CPU tensors); returns its sha256."""
    state = {name: tensor.detach().cpu() for name, tensor in model.state_dict().items()}
    path = Path(cell_dir) / WEIGHTS
    with atomic_path(path) as tmp:
        torch.save(state, tmp)
    return file_sha256(path)


def load_matching(model, path: Path) -> dict:
    """Copy every tensor of the weights at `path` whose name and shape match into `model`;
    returns the report {source, loaded, fresh (names left as built), unused (source names not
    loaded)}."""
    try:
        state = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as error:  # torn or not a plain state dict
        raise ValueError(
            f"{path}: cannot be read as source weights ({type(error).__name__}); delete it so "
            "that the source job trains again"
        ) from None
    own = model.state_dict()
    matched = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    model.load_state_dict(matched, strict=False)
    return {
        "source": str(path),
        "loaded": len(matched),
        "fresh": sorted(set(own) - set(matched)),
        "unused": sorted(set(state) - set(matched)),
    }
