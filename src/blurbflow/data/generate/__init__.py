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
    bioasq_factoid,
    biosses,
    blurb_index,
    ddi,
    ebmnlp,
    gad,
    hoc,
    ner,
    pubmedqa,
    squad,
)
from blurbflow.data.generate import chemprot as chemprot_generator


def _biobert_datasets(out_dir: Path, seed: int) -> None:
    """BioBERT's datasets.tar.gz: the corpora the Bio-LM study reads from it."""
    ner.generate("species800", out_dir, seed)
    gad.generate_euadr(out_dir, seed)


GENERATORS: dict[str, Callable[[Path, int], None]] = {
    **{name: partial(ner.generate, name) for name in ner.SOURCES if name != "species800"},
    "biobert-datasets": _biobert_datasets,
    "gad": gad.generate,
    "biosses": biosses.generate,
    "hoc": hoc.generate,
    "pubmedqa": pubmedqa.generate,
    "blurb-index": blurb_index.generate,
    "chemprot": chemprot_generator.generate,
    "ddi": ddi.generate,
    "ebmnlp": ebmnlp.generate,
    "bioasq": bioasq.generate,
    "squad-v1.1": partial(squad.generate, version="1.1"),
    "squad-v2.0": partial(squad.generate, version="2.0"),
    "bioasq-factoid": bioasq_factoid.generate,
}


def generate_source(source: str, out_dir: Path, seed: int = 0) -> None:
    """Write a synthetic `source` into `out_dir` (created if missing)."""
    try:
        write = GENERATORS[source]
    except KeyError:
        raise KeyError(no_generator_message(source)) from None
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write(out_dir, seed)


def no_generator_message(source: str) -> str:
    """Why `source` cannot be generated: the tasks that read it and what to do instead."""
    from blurbflow.tasks.registry import ENTRIES

    tasks = ", ".join(spec.name for spec in ENTRIES if source in spec.sources)
    if not tasks:
        known = ", ".join(sorted(GENERATORS))
        return f"no synthetic generator for source {source!r}; known: {known}"
    return (
        f"task {tasks}: source {source!r} has no synthetic data (no generator in "
        "blurbflow.data.generate); set `data.source: download` in the config, or give a "
        "`mirror:` that serves its files"
    )


def check_generated(tasks) -> None:
    """Fail early, naming the task, when `data.source: generated` asks for a source without a
    generator (workflow/rules/common.smk can call it with the study's tasks)."""
    from blurbflow.tasks.registry import get_task

    for task in tasks:
        for source in get_task(task).sources:
            if source not in GENERATORS:
                raise ValueError(no_generator_message(source))
