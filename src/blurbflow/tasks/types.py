"""Task types: everything that differs between kinds of task, as data.

A type says what its prepared frames hold (`columns`), how its input is encoded (`inputs`: the
encoders in `blurbflow.train.encode`), what it predicts (`target`: the head, the loss and the
decoding in `blurbflow.train.predict` follow from it), which recipe options change its input,
which metrics apply and what `stats.json` counts. Code asks the type (`spec.kind`) instead of
comparing type names, so a new type is one entry in `TYPES` (and a new `inputs`/`target` only
when no existing one fits). The contract test (tests/test_task_registry.py) checks every entry.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from blurbflow.util.errors import ConfigError, did_you_mean

# target -> (gold column, transformers' problem_type; None: token classification)
TARGETS: dict[str, tuple[str, str | None]] = {
    "tags": ("tags", None),  # one label per word
    "label": ("label", "single_label_classification"),
    "labels": ("labels", "multi_label_classification"),  # a set of labels per instance
    "score": ("score", "regression"),
    "span": ("gold_answers", None),  # answer spans in the context (extractive QA)
}
# inputs -> the prepared columns the encoder reads
INPUTS: dict[str, tuple[str, ...]] = {
    "words": ("tokens",),
    "text": ("text",),
    "pair": ("text_a", "text_b"),
    "question": ("question", "context"),
    "entities": ("text",),
    "windows": ("question", "context"),  # overlapping windows over long contexts
}


def _label_counts(values) -> dict[str, int]:
    return dict(sorted(Counter(str(v) for v in values).items()))


def _ner_stats(frame) -> dict:
    return {
        "tokens": int(frame["tokens"].map(len).sum()),
        "entity_mentions": int(sum(list(tags).count("B") for tags in frame["tags"])),
    }


def _pico_stats(frame) -> dict:
    """Sentences are the instances; `pico_words` counts the words tagged I-PAR/I-INT/I-OUT."""
    counts = Counter(tag for tags in frame["tags"] for tag in tags)
    words = {tag: int(counts.get(tag, 0)) for tag in ("I-INT", "I-OUT", "I-PAR")}
    return {
        "tokens": int(frame["tokens"].map(len).sum()),
        "pico_words": words,
        "labelled_words": sum(words.values()),
    }


def _doccls_stats(frame) -> dict:
    labels = (label for labels in frame["labels"] for label in labels)
    return {
        "sentences": int(frame["sentences"].map(len).sum()),
        "label_counts": _label_counts(labels),
    }


def _label_stats(frame) -> dict:
    return {"label_counts": _label_counts(frame["label"])}


def _span_stats(frame) -> dict:
    """Questions (BioASQ: several instances, one per snippet), instances with/without answer."""
    answerable = int((~frame["is_impossible"].astype(bool)).sum()) if len(frame) else 0
    return {
        "questions": int(frame["question_id"].nunique()),
        "answerable": answerable,
        "unanswerable": len(frame) - answerable,
    }


@dataclass(frozen=True, kw_only=True)
class TaskType:
    name: str
    columns: tuple[str, ...]  # the prepared frame of every split, in this order
    inputs: str  # a key of INPUTS
    target: str  # a key of TARGETS
    input_options: tuple[str, ...] = ()  # recipe options that change the encoded input
    metrics: tuple[str, ...]  # keys of blurbflow.metrics.METRICS; the first is the default
    stats: Callable = lambda frame: {}  # noqa: E731  (extra per-split counts for stats.json)
    blurb: bool = True  # one of BLURB's six types (the papers' BLURB score)

    @property
    def gold_column(self) -> str:
        return TARGETS[self.target][0]

    @property
    def problem_type(self) -> str | None:
        return TARGETS[self.target][1]

    @property
    def token_level(self) -> bool:
        return self.target == "tags"

    @property
    def float_labels(self) -> bool:
        """Training targets are floats (regression, multi-label), not class ids."""
        return self.target in ("score", "labels")


_RE_COLUMNS = ("original_text", "e1_start", "e1_end", "e2_start", "e2_end", "e1_type", "e2_type")
# What the word-tagging types have in common, and the single-label classification types.
_TAGGING = {
    "columns": ("id", "split", "tokens", "tags"),
    "inputs": "words",
    "target": "tags",
    "input_options": ("tagging",),
}
_SINGLE_LABEL = {"target": "label", "stats": _label_stats}

# Extractive QA (blurbflow.qa): one instance per (question, context); `question_id` groups a
# question's instances, `gold_answers` holds what scoring compares with (SQuAD's answers,
# BioASQ's synonyms).
SPAN_COLUMNS = (
    "id", "split", "question", "context", "answer_texts", "answer_starts", "is_impossible",
    "question_id", "gold_answers",
)  # fmt: skip

# BLURB's six in the papers' order first: tables and the BLURB score list types in this order.
TYPES: dict[str, TaskType] = {
    t.name: t
    for t in [
        TaskType(
            name="ner", metrics=("entity_f1", "relaxed_entity_f1"), stats=_ner_stats, **_TAGGING
        ),
        TaskType(name="pico", metrics=("pico_macro_f1",), stats=_pico_stats, **_TAGGING),
        # re: `text` has the entities replaced by placeholders; `original_text` with the e1/e2
        # character spans (e1 first) lets marker inputs be built; None where the source has none
        TaskType(
            name="re",
            columns=("id", "split", "text", "label", *_RE_COLUMNS),
            inputs="entities",
            input_options=("re_input",),
            metrics=("micro_f1", "positive_f1", "accuracy", "macro_f1"),
            **_SINGLE_LABEL,
        ),
        TaskType(
            name="sts",
            columns=("id", "split", "text_a", "text_b", "score"),
            inputs="pair",
            target="score",
            input_options=("segment_ids",),
            metrics=("pearson",),
        ),
        TaskType(
            name="doccls",
            columns=("id", "split", "text", "labels", "sentences", "sentence_labels"),
            inputs="text",
            target="labels",
            metrics=("hoc_micro_f1", "hoc_macro_f1"),
            stats=_doccls_stats,
        ),
        TaskType(
            name="qa",
            columns=("id", "split", "question", "context", "label"),
            inputs="question",
            input_options=("segment_ids",),
            metrics=("accuracy", "macro_f1"),
            **_SINGLE_LABEL,
        ),
        # Beyond BLURB: single-label text classification (users' own corpora).
        TaskType(
            name="cls",
            columns=("id", "split", "text", "label"),
            inputs="text",
            metrics=("accuracy", "macro_f1", "micro_f1"),
            blurb=False,
            **_SINGLE_LABEL,
        ),
        # Beyond BLURB: extractive QA (SQuAD, BioASQ factoid); docs/metrics.md
        TaskType(
            name="span",
            columns=SPAN_COLUMNS,
            inputs="windows",
            target="span",
            metrics=("squad_f1", "squad_em", "factoid_mrr", "factoid_strict", "factoid_lenient"),
            stats=_span_stats,
            blurb=False,
        ),
    ]
}
TASK_TYPES: tuple[str, ...] = tuple(TYPES)
BLURB_TYPES: tuple[str, ...] = tuple(name for name, t in TYPES.items() if t.blurb)


# Metrics computed together at every evaluation (result.json's dev_scores/test_scores): a study's
# `metric` may show another member of its tasks' family (Tinn et al. Table 11: relaxed entity F1).
METRIC_FAMILIES = (
    ("entity_f1", "relaxed_entity_f1"),
    ("hoc_micro_f1", "hoc_macro_f1"),  # HoC: pooled, and the mean of the hallmarks' F1s
    ("squad_f1", "squad_em"),
    ("factoid_mrr", "factoid_strict", "factoid_lenient"),
)


def metric_family(metric: str) -> tuple[str, ...]:
    """The metrics recorded beside `metric` (itself included); () when it has no family."""
    return next((family for family in METRIC_FAMILIES if metric in family), ())


def check_metric_recorded(where: str, metric: str, task) -> None:
    """A study's `metric` must be one the evaluations of `task` (a TaskSpec) record."""
    family = metric_family(task.metric) or (task.metric,)
    if metric not in family:
        raise ConfigError(
            f"{where}: {metric!r} is not recorded for task {task.name!r} (its evaluations "
            f"record {', '.join(family)}){did_you_mean(metric, family)}"
        )


def get_type(name: str) -> TaskType:
    try:
        return TYPES[name]
    except KeyError:
        raise KeyError(f"unknown task type {name!r}; known: {', '.join(TYPES)}") from None
