"""Relation-extraction inputs (recipe option `re_input`): the text as prepared (dummified), with
entity markers, or the original text, plus each entity's token span and start for `re_pooling`
(the `entities` encoder of `blurbflow.train.encode`)."""

from __future__ import annotations

import re

import pandas as pd

from blurbflow.tasks import TaskSpec

# Entity placeholders of dummified RE text: @CHEMICAL$, @GENE$, @CHEM-GENE$, @DRUG$, @DISEASE$ …
PLACEHOLDER = re.compile(r"@[A-Z][A-Za-z-]*\$")
RE_INPUTS = ("dummify", "markers", "original")


def _marked(text: str, spans: list[tuple[int, int]]) -> tuple[str, list, list]:
    """`text` with [E1] … [/E1], [E2] … [/E2] inserted around the two character spans; returns
    the new text, each mention's span in it and each opening marker's start."""
    events = []  # (position, order at a tie, piece, entity, what)
    for k, (start, end) in enumerate(spans):
        # at one position: closings first (the later-opened entity first), then openings
        events.append((end, 0, 1 - k, f" [/E{k + 1}]", k, "close"))
        events.append((start, 1, k, f"[E{k + 1}] ", k, "open"))
    out, last = [], 0
    length = 0
    mentions = [[0, 0], [0, 0]]
    markers = [0, 0]
    for position, _, _, piece, k, what in sorted(events):
        out.append(text[last:position])
        length += position - last
        last = position
        if what == "open":
            markers[k] = length
            mentions[k][0] = length + len(piece)
        else:
            mentions[k][1] = length
        out.append(piece)
        length += len(piece)
    out.append(text[last:])
    return "".join(out), [tuple(m) for m in mentions], markers


def _token_span(offsets, start: int, end: int) -> tuple[int, int] | None:
    inside = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    return (inside[0], inside[-1] + 1) if inside else None


def _re_inputs(frame: pd.DataFrame, spec: TaskSpec, re_input: str):
    """Texts, each row's two entity character spans (None: not found) and marker starts."""
    if re_input not in RE_INPUTS:
        raise ValueError(f"re_input: unknown {re_input!r}; use one of {', '.join(RE_INPUTS)}")
    texts, entities, markers = [], [], []
    if re_input == "dummify":
        for text in frame["text"].astype(str):
            found = [m.span() for m in PLACEHOLDER.finditer(text)]
            if len(found) == 1:  # overlapping entities share one placeholder (@CHEM-GENE$)
                found = found * 2
            texts.append(text)
            entities.append(found if len(found) == 2 else None)
            markers.append(None)
        return texts, entities, markers
    columns = ("original_text", "e1_start", "e1_end", "e2_start", "e2_end")
    for row in frame.itertuples(index=False):
        values = [getattr(row, c, None) for c in columns]
        if any(v is None or (isinstance(v, float) and v != v) for v in values):
            raise ValueError(
                f"task {spec.name}: re_input={re_input!r} needs the original text and entity "
                f"spans (original_text, e1_start … e2_end), which row {row.id!r} lacks — "
                f"{spec.name}'s text comes already dummified; use re_input: dummify for "
                f"{spec.name}"
            )
        text, s1, t1, s2, t2 = values[0], *(int(v) for v in values[1:])
        if re_input == "markers":
            text, spans, starts = _marked(str(text), [(s1, t1), (s2, t2)])
        else:
            spans, starts = [(s1, t1), (s2, t2)], None
        texts.append(str(text))
        entities.append(spans)
        markers.append(starts)
    return texts, entities, markers


def encode_entities(frame, spec, tokenizer, max_length, re_input, columns, counts) -> dict:
    texts, entities, markers = _re_inputs(frame, spec, re_input)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"task {spec.name}: entity positions need a fast tokenizer (offset mappings); "
            f"{type(tokenizer).__name__} is not one"
        )
    enc = tokenizer(texts, truncation=True, max_length=max_length, return_offsets_mapping=True)
    for k in (1, 2):
        columns[f"e{k}_span"], columns[f"e{k}_pos"] = [], []
    for row, offsets in enumerate(enc["offset_mapping"]):
        for k in (0, 1):
            span = start = None
            if entities[row] is None:
                counts["entities_not_found"] += 1
            else:
                span = _token_span(offsets, *entities[row][k])
                start = span[0] if span else None
                if markers[row] is not None:
                    marker = _token_span(offsets, markers[row][k], markers[row][k] + 4)
                    start = marker[0] if marker else None
                if span is None or start is None:
                    counts["entities_truncated"] += 1
            columns[f"e{k + 1}_span"].append(list(span) if span and start is not None else [0, 1])
            columns[f"e{k + 1}_pos"].append(start if span and start is not None else 0)
    return enc
