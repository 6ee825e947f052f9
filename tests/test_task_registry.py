"""The registry's contract: every task entry names pieces that exist (type, metric, parser,
sources with a generator and well-formed digests, a size), and every task type has every piece
of behaviour (columns, encoder, targets, gold, decoder, metrics, stats) — shown by running a
small frame of each type through encode → decode → metric → chance baseline."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
import torch

from blurbflow.data.generate import GENERATORS
from blurbflow.data.parsers import PARSERS
from blurbflow.data.parsers.common import make_frame
from blurbflow.metrics import METRICS, chance_baseline, compute_metric
from blurbflow.models.build import train_tokenizer
from blurbflow.options import InputOptions
from blurbflow.tasks import TASKS, get_task, get_type
from blurbflow.tasks.custom import custom_task
from blurbflow.tasks.registry import BUILTIN
from blurbflow.tasks.sources import READS, SOURCES
from blurbflow.tasks.types import BLURB_TYPES, INPUTS, TARGETS, TYPES
from blurbflow.train import encode, predict
from blurbflow.train.tagging import scheme_labels

DIGEST = re.compile(r"[0-9a-f]{64}")


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_builtin_entry_is_complete(name):
    spec = BUILTIN[name]
    assert spec.name == name and spec.builtin
    assert spec.type in TYPES
    assert spec.metric in METRICS and spec.metric in spec.kind.metrics
    assert spec.parser in PARSERS
    assert spec.size and spec.size > 0  # runtime estimate before any data exists
    assert 8 <= spec.max_length <= 512
    assert spec.raw, "a built-in task reads at least one raw source"
    if spec.kind.target not in ("score", "span"):  # regression and answer spans have none
        assert len(spec.labels) >= 2
    if spec.negative_label is not None:
        assert spec.negative_label in spec.labels
    for source in spec.raw:
        assert SOURCES[source.name] is source  # one definition per shared source
        assert source.urls or source.manual
        # synthetic files exist exactly where the entry says so (Source.generated)
        assert (source.name in GENERATORS) == source.generated, source.name
        for pattern, digest in source.checksums.items():
            assert DIGEST.fullmatch(digest), (source.name, pattern)
            assert pattern in READS[source.name]


def test_registry_counts_and_order():
    from blurbflow.tasks import builtin

    assert len(builtin.ENTRIES) == 13 and list(BUILTIN)[:13] == [t.name for t in builtin.ENTRIES]
    assert BLURB_TYPES == ("ner", "pico", "re", "sts", "doccls", "qa")
    assert {spec.type for spec in builtin.ENTRIES} == set(BLURB_TYPES)
    assert get_task("gad").metric == "positive_f1" and get_task("hoc").metric == "hoc_micro_f1"
    with pytest.raises(KeyError, match="docs/data.md 'Your own tasks'"):
        get_task("nosuchtask")


TEXT = "@GENE$ causes @DISEASE$ in mice treated with aspirin"


def _spec(kind: str):
    """A built-in task of the type, else a task of one's own (types beyond BLURB)."""
    for spec in TASKS.values():
        if spec.type == kind:
            return spec
    return custom_task(
        f"my-{kind}",
        {
            "type": kind,
            "format": "jsonl",
            "labels": ["no", "yes"],
            "files": {"train": "a", "dev": "b", "test": "c"},
        },
    )


def _rows(spec, n: int = 4) -> list[dict]:
    tags = [label for label in spec.labels if label != "O"][:1] * 2 + ["O"]
    values = {
        "tokens": ["aspirin", "reduces", "fever"],
        "tags": tags,
        "text": TEXT,
        "text_a": "aspirin reduces fever",
        "text_b": "fever is reduced by aspirin",
        "question": "does aspirin reduce fever?",
        "context": TEXT,
        "sentences": [TEXT],
        "answer_texts": ["aspirin"],  # extractive QA (span)
        "answer_starts": [TEXT.index("aspirin")],
        "is_impossible": False,
        "gold_answers": ["aspirin"],
    }
    rows = []
    for i in range(n):
        row = {"id": str(i)}
        for column in spec.kind.columns[2:]:
            if column == "label":
                row[column] = spec.labels[i % len(spec.labels)]
            elif column == "labels":
                row[column] = [spec.labels[i % len(spec.labels)]]
            elif column == "sentence_labels":
                row[column] = [[spec.labels[0]]]
            elif column == "score":
                row[column] = float(i)
            elif column == "question_id":
                row[column] = f"q{i}"
            else:
                row[column] = values.get(column)
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer([TEXT, "aspirin reduces fever is reduced by does ?"] * 5, 120)


def missing_pieces(task_type) -> list[str]:
    """The pieces of behaviour a task type names that do not exist."""
    checks = {
        "columns": task_type.columns[:2] == ("id", "split"),
        "encoder": task_type.inputs in INPUTS and task_type.inputs in encode.ENCODERS,
        "input columns": set(INPUTS.get(task_type.inputs, ("?",))) <= set(task_type.columns),
        "target": task_type.target in TARGETS,
        "gold": task_type.target in predict.GOLD,
        "decoder": task_type.target in predict.DECODERS,
        # word tags and answer spans are set by their encoders
        "training targets": task_type.target in ("tags", "span", *encode.TARGETS),
        "input options": set(task_type.input_options) <= set(InputOptions.VALUES),
        "metrics": bool(task_type.metrics) and set(task_type.metrics) <= set(METRICS),
    }
    return [name for name, ok in checks.items() if not ok]


@pytest.mark.parametrize("kind", list(TYPES))
def test_every_type_runs_encode_decode_metric(kind, tokenizer):
    task_type = get_type(kind)
    assert missing_pieces(task_type) == []
    assert task_type.gold_column in task_type.columns

    spec = _spec(kind)
    frame = make_frame(kind, "train", _rows(spec))
    stats = task_type.stats(frame)
    assert isinstance(stats, dict)
    columns = encode._encode_frame(frame, spec, tokenizer, InputOptions(max_length=32))
    assert len(columns["input_ids"]) == len(frame) == len(columns["length"])
    gold = predict.gold_labels(spec, frame)
    assert len(gold) == len(frame)
    rows = list(range(len(frame)))
    torch.manual_seed(0)
    if task_type.token_level:
        width = len(scheme_labels(spec.type, spec.labels, "BIO"))
        logits = torch.randn(len(rows), max(columns["length"]), width)
    elif task_type.target == "span":  # start and end logits per token
        logits = torch.randn(len(rows), max(columns["length"]), 2)
    else:
        width = 1 if task_type.problem_type == "regression" else len(spec.labels)
        logits = torch.randn(len(rows), width)
    preds = predict.decode(spec, logits, columns, rows)
    assert len(preds) == len(gold)
    for metric in task_type.metrics:
        if metric == "positive_f1" and len(spec.labels) != 2:
            continue  # a binary task's (GAD's) metric
        score = compute_metric(spec.__class__(**{**vars(spec), "metric": metric}), gold, preds)
        assert math.isfinite(score) and 0 <= abs(score) <= 100
    assert math.isfinite(chance_baseline(spec, gold, gold))


def test_a_new_type_missing_a_piece_fails_the_contract():
    broken = get_type("cls").__class__(
        name="broken",
        columns=("id", "split", "text", "label"),
        inputs="image",
        target="bbox",
        metrics=("bleu",),
    )
    assert missing_pieces(broken) == [
        "encoder",
        "input columns",
        "target",
        "gold",
        "decoder",
        "training targets",
        "metrics",
    ]


def test_prepared_stats_come_from_the_type():
    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "split": "train",
            "tokens": [["x", "y"], ["z"]],
            "tags": [["B", "I"], ["B"]],
        }
    )
    assert get_type("ner").stats(frame) == {"tokens": 3, "entity_mentions": 2}
