"""SentencePiece tokenizers (ALBERT's `spiece.model`): transformers converts a folder that ships
only the SentencePiece model into a fast tokenizer, which needs the `sentencepiece` and
`protobuf` packages. Without them it fails with a misleading tiktoken error; this check says
what is missing instead."""

from __future__ import annotations

import importlib.util
from pathlib import Path

NEEDED = (("sentencepiece", "sentencepiece"), ("protobuf", "google.protobuf"))  # (pip, module)


def importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package (google) is missing
        return False


def check_sentencepiece(source: str | Path) -> None:
    """ValueError naming the packages to install when the model folder `source` holds a
    SentencePiece model and no tokenizer.json, and transformers could not convert it."""
    folder = Path(source)
    if not folder.is_dir() or (folder / "tokenizer.json").exists():
        return
    models = sorted(p.name for p in folder.glob("*.model"))
    missing = [pip for pip, module in NEEDED if not importable(module)]
    if models and missing:
        raise ValueError(
            f"{source}: the tokenizer is a SentencePiece model ({', '.join(models)}, no "
            f"tokenizer.json), which transformers converts with {' and '.join(missing)}: "
            f"install {' '.join(missing)} (blurbflow's dependencies include them; re-run "
            "`make setup`)"
        )
