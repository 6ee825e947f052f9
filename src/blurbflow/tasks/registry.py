"""The 13 BLURB tasks: type, metric, labels, input length and raw sources (DESIGN §4, §6, §7).

A new task is one entry here plus one parser in `blurbflow.data.parsers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TASK_TYPES = ("ner", "pico", "re", "sts", "doccls", "qa")

HOC_HALLMARKS = (
    "activating invasion and metastasis",
    "avoiding immune destruction",
    "cellular energetics",
    "enabling replicative immortality",
    "evading growth suppressors",
    "genomic instability and mutation",
    "inducing angiogenesis",
    "resisting cell death",
    "sustaining proliferative signaling",
    "tumor promoting inflammation",
)


@dataclass(frozen=True)
class TaskSpec:
    name: str
    type: str  # one of TASK_TYPES
    metric: str  # a key of blurbflow.metrics.METRICS
    labels: tuple[str, ...]  # label vocabulary; empty for regression
    max_length: int  # Gu et al. §5.2 input length in sub-word tokens
    sources: tuple[str, ...]  # raw sources (see blurbflow.tasks.sources) the parser reads
    negative_label: str | None = None  # excluded from micro F1 (ChemProt, DDI) or the GAD negative
    seeds: int = 5  # Gu et al.: 10 for the small, unstable tasks
    options: dict = field(default_factory=dict)  # parser options (e.g. GAD's train line count)


NER_LABELS = ("B", "I", "O")
PICO_LABELS = ("I-INT", "I-OUT", "I-PAR", "O")

TASKS: dict[str, TaskSpec] = {
    t.name: t
    for t in [
        TaskSpec("bc5chem", "ner", "entity_f1", NER_LABELS, 512, ("bc5chem",)),
        TaskSpec("bc5disease", "ner", "entity_f1", NER_LABELS, 512, ("bc5disease",)),
        TaskSpec("ncbidisease", "ner", "entity_f1", NER_LABELS, 512, ("ncbidisease",)),
        TaskSpec("bc2gm", "ner", "entity_f1", NER_LABELS, 512, ("bc2gm",)),
        TaskSpec("jnlpba", "ner", "entity_f1", NER_LABELS, 512, ("jnlpba",)),
        TaskSpec("ebmpico", "pico", "pico_macro_f1", PICO_LABELS, 512, ("ebmnlp", "blurb-index")),
        TaskSpec(
            "chemprot",
            "re",
            "micro_f1",
            ("CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false"),
            256,
            ("chemprot",),
            negative_label="false",
        ),
        TaskSpec(
            "ddi",
            "re",
            "micro_f1",
            ("DDI-advise", "DDI-effect", "DDI-false", "DDI-int", "DDI-mechanism"),
            256,
            ("ddi", "blurb-index"),
            negative_label="DDI-false",
        ),
        TaskSpec(
            "gad",
            "re",
            "positive_f1",
            ("0", "1"),
            128,
            ("gad",),
            negative_label="0",
            options={"train_lines": 4261},
        ),
        TaskSpec("biosses", "sts", "pearson", (), 512, ("biosses",), seeds=10),
        TaskSpec("hoc", "doccls", "hoc_micro_f1", HOC_HALLMARKS, 512, ("hoc", "blurb-index")),
        TaskSpec(
            "pubmedqa", "qa", "accuracy", ("maybe", "no", "yes"), 512, ("pubmedqa",), seeds=10
        ),
        TaskSpec(
            "bioasq", "qa", "accuracy", ("no", "yes"), 512, ("bioasq", "blurb-index"), seeds=10
        ),
    ]
}


def get_task(name: str) -> TaskSpec:
    try:
        return TASKS[name]
    except KeyError:
        known = ", ".join(sorted(TASKS))
        raise KeyError(f"unknown task {name!r}; known tasks: {known}") from None
