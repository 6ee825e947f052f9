"""Synthetic raw sources: each written in exactly the file format and layout the real source has
after download and extraction (`blurbflow.tasks.sources.LAYOUT`), so the parsers cannot tell
them apart. Sizes keep the demo fast on 2 CPU cores; labels follow simple cues, so a tiny model
learns them and beats the majority baseline. Deterministic in `seed`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import partial
from pathlib import Path

from blurbflow.data.generate import ner  # light (its SOURCES name the NER sources)


def _run(module: str, function: str, *args, **kwargs) -> None:
    getattr(importlib.import_module(f"blurbflow.data.generate.{module}"), function)(*args, **kwargs)


def _lazy(module: str, *args, **kwargs) -> Callable[[Path, int], None]:
    """`module`'s generate(), imported when it runs: reading the workflow (`check_generated`)
    imports no generator, nor the parsers one shares (pandas)."""
    return partial(_run, module, "generate", *args, **kwargs)


def _biobert_datasets(out_dir: Path, seed: int) -> None:
    """BioBERT's datasets.tar.gz: the corpora the Bio-LM study reads from it."""
    ner.generate("species800", out_dir, seed)
    _run("gad", "generate_euadr", out_dir, seed)


GENERATORS: dict[str, Callable[[Path, int], None]] = {
    **{name: _lazy("ner", name) for name in ner.SOURCES if name != "species800"},
    "biobert-datasets": _biobert_datasets,
    "gad": _lazy("gad"),
    "biosses": _lazy("biosses"),
    "hoc": _lazy("hoc"),
    "pubmedqa": _lazy("pubmedqa"),
    "blurb-index": _lazy("blurb_index"),
    "chemprot": _lazy("chemprot"),
    "ddi": _lazy("ddi"),
    "ebmnlp": _lazy("ebmnlp"),
    "bioasq": _lazy("bioasq"),
    "squad-v1.1": _lazy("squad", version="1.1"),
    "squad-v2.0": _lazy("squad", version="2.0"),
    "bioasq-factoid": _lazy("bioasq_factoid"),
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
