"""One line per study saying which heads its cells trained, what their sequence heads read and
which attention ran: read off the cells' `head`, `pooling` and `attn_implementation` columns
(result.json; null in cells written before they were recorded), models with the same
combination named together. Compact at any scale: the columns are reduced to their distinct
(model, value) pairs before anything is formatted (docs/recipes.md, "Options")."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

# What each recorded pooling reads (blurbflow.models.pooling); an entity pooling of relation
# tasks (`max`, `mention`, `entity_start`) is named as the entities' pooling.
READS = {"pooler": "the pooler", "cls": "[CLS]", "mean": "the mean", "last": "the last token"}
COLUMNS = ("head", "pooling", "attn_implementation")


def _reads(pooling: str) -> str:
    return READS.get(pooling, f"the entities' {pooling}")


def _head_phrases(pairs: pd.DataFrame) -> tuple[str, ...]:
    """One model's (head, pooling) pairs as one phrase per head: `cls_linear reading the pooler
    or [CLS]`; a head recorded only without a pooling (token tasks, extractive QA) by its name
    alone."""
    reads: dict[str, set[str]] = {}
    for head, pooling in pairs.itertuples(index=False):
        if head is not None or pooling is not None:
            reads.setdefault(head or "the head", set())
            if pooling is not None:
                reads[head or "the head"].add(_reads(pooling))
    return tuple(
        f"{head} reading {' or '.join(sorted(read))}" if read else head
        for head, read in sorted(reads.items())
    )


def _grouped(per_model: dict[str, tuple[str, ...]], models: Sequence[str]) -> str:
    """`a and b (m1, m2), c (m3)`: models with the same phrases together, the most models
    first, each group's models in the study's order."""
    rank = {model: i for i, model in enumerate(models)}
    groups: dict[tuple[str, ...], list[str]] = {}
    for model in sorted(per_model, key=lambda m: (rank.get(m, len(rank)), m)):
        if per_model[model]:
            groups.setdefault(per_model[model], []).append(model)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return ", ".join(f"{' and '.join(words)} ({', '.join(names)})" for words, names in ordered)


def _distinct(cells: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    frame = cells[["model", *columns]].drop_duplicates()
    return frame.astype("object").where(frame.notna(), None)


def heads_line(cells: pd.DataFrame, models: Sequence[str], mask: pd.Series | None = None) -> str:
    """The line of the study whose cells `mask` picks (every status; columns absent count as
    null): `Heads: …; attention: …`, or "" when none of its cells recorded them."""
    present = [c for c in COLUMNS if c in cells.columns]
    cells = cells.loc[cells.index if mask is None else mask, ["model", *present]]
    cells = cells.assign(**{c: None for c in COLUMNS if c not in present})
    if cells.empty or cells[list(COLUMNS)].isna().all(axis=None):
        return ""
    heads = _distinct(cells, ["head", "pooling"])
    phrases = {
        model: _head_phrases(pairs[["head", "pooling"]])
        for model, pairs in heads.groupby("model", sort=False)
    }
    attention = _distinct(cells, ["attn_implementation"]).dropna()
    kernels = {
        model: tuple(sorted(group["attn_implementation"]))
        for model, group in attention.groupby("model", sort=False)
    }
    parts = [
        f"{label}: {text}"
        for label, text in (
            ("Heads", _grouped(phrases, models)),
            ("attention", _grouped(kernels, models)),
        )
        if text
    ]
    return "; ".join(parts) + "."
