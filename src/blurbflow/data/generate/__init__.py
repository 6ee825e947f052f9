"""Synthetic raw sources: each written in exactly the file format and layout the real source has
after download and extraction (`blurbflow.tasks.sources.LAYOUT`), so the parsers cannot tell
them apart. Sizes keep the demo fast on 2 CPU cores; labels follow simple cues, so a tiny model
learns them and beats the majority baseline. Deterministic in `seed`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from blurbflow.data.generate import (
    bioasq,
    biosses,
    blurb_index,
    ddi,
    ebmnlp,
    gad,
    hoc,
    ner,
    pubmedqa,
)
from blurbflow.data.generate import chemprot as chemprot_generator

GENERATORS: dict[str, Callable[[Path, int], None]] = {
    **{name: partial(ner.generate, name) for name in ner.SOURCES},
    "gad": gad.generate,
    "biosses": biosses.generate,
    "hoc": hoc.generate,
    "pubmedqa": pubmedqa.generate,
    "blurb-index": blurb_index.generate,
    "chemprot": chemprot_generator.generate,
    "ddi": ddi.generate,
    "ebmnlp": ebmnlp.generate,
    "bioasq": bioasq.generate,
}


def generate_source(source: str, out_dir: Path, seed: int = 0) -> None:
    """Write a synthetic `source` into `out_dir` (created if missing)."""
    try:
        write = GENERATORS[source]
    except KeyError:
        known = ", ".join(sorted(GENERATORS))
        raise KeyError(f"no synthetic generator for source {source!r}; known: {known}") from None
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write(out_dir, seed)
