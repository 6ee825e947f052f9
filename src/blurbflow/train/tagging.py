"""Tagging schemes for the word-level tasks (recipe option `tagging`, docs/recipes.md).

Gold tags are converted to the scheme for training, and predicted tags are decoded back to the
prepared (gold) format before scoring, so the metric always sees what it sees for `BIO`.

- NER (BLURB's untyped tags B/I/O): `BIO` = the prepared tags; `BIOUL` = B (first of several
  words), I (inside), L (last), U (a one-word entity), O; `IO` = I/O only (adjacent entities
  merge: that is the scheme's known loss).
- PICO (tags I-PAR/I-INT/I-OUT/O, one type per word): `BIO` and `IO` = the prepared tags (they
  are already IO: typed spans without boundaries between same-type neighbours); `BIOUL` = B-X,
  I-X, L-X, U-X over each maximal run of one type, plus O.

Entities are read with conlleval semantics: B starts one, I continues one of the same type or
starts one after O or another type. Invalid predicted sequences are repaired deterministically:
an I or L with no open entity of its type starts one; B or U closes the open entity; an entity
left open (no L) ends where the next O or entity starts.
"""

from __future__ import annotations

from collections.abc import Sequence

SCHEMES = ("BIO", "BIOUL", "IO")
Span = tuple[int, int, str]  # [start, end) word positions and the entity type ("" untyped)


def _check(scheme: str) -> None:
    if scheme not in SCHEMES:
        raise ValueError(f"tagging: unknown scheme {scheme!r}; use one of {', '.join(SCHEMES)}")


def _split(tag: str) -> tuple[str, str]:
    """('B', 'PAR') for 'B-PAR', ('I', '') for 'I', ('O', '') for 'O'."""
    if tag == "O":
        return "O", ""
    prefix, _, kind = tag.partition("-")
    if prefix not in ("B", "I", "L", "U") or not prefix:
        raise ValueError(f"tag {tag!r} is not O or B/I/L/U[-TYPE]")
    return prefix, kind


def _tag(prefix: str, kind: str) -> str:
    return f"{prefix}-{kind}" if kind else prefix


def spans(tags: Sequence[str]) -> list[Span]:
    """Entities of a BIO, BIOUL or IO sequence (repairing invalid ones, see the module doc)."""
    found: list[Span] = []
    start, kind = None, ""

    def close(end: int) -> None:
        nonlocal start
        if start is not None:
            found.append((start, end, kind))
        start = None

    for i, tag in enumerate(tags):
        prefix, this = _split(tag)
        if prefix == "O":
            close(i)
        elif prefix in ("B", "U"):
            close(i)
            start, kind = i, this
            if prefix == "U":
                close(i + 1)
        else:  # I or L: continue an open entity of the same type, else start one
            if start is None or kind != this:
                close(i)
                start, kind = i, this
            if prefix == "L":
                close(i + 1)
    close(len(tags))
    return found


def from_spans(entities: list[Span], length: int, scheme: str, typed: bool) -> list[str]:
    """Write entities in `scheme`; for PICO (`typed`) BIO/IO both write I-X on every word."""
    _check(scheme)
    out = ["O"] * length
    for start, end, kind in entities:
        for i in range(start, end):
            if scheme == "IO" or (typed and scheme == "BIO"):
                prefix = "I"
            elif scheme == "BIO":
                prefix = "B" if i == start else "I"
            elif end - start == 1:
                prefix = "U"
            else:
                prefix = "B" if i == start else ("L" if i == end - 1 else "I")
            out[i] = _tag(prefix, kind)
    return out


def is_typed(task_type: str) -> bool:
    return task_type == "pico"


def to_scheme(tags: Sequence[str], scheme: str, task_type: str) -> list[str]:
    """Gold (prepared) tags in the training scheme. `BIO` returns them unchanged."""
    _check(scheme)
    if scheme == "BIO":
        return list(tags)
    return from_spans(spans(tags), len(tags), scheme, is_typed(task_type))


def to_gold_format(tags: Sequence[str], scheme: str, task_type: str) -> list[str]:
    """Predicted tags in `scheme` decoded to the prepared format the metric scores (NER: B/I/O
    with a B at every entity start; PICO: I-X/O). `BIO` predictions pass through unchanged
    (the metric itself reads them with conlleval semantics)."""
    _check(scheme)
    if scheme == "BIO":
        return list(tags)
    return from_spans(spans(tags), len(tags), "BIO", is_typed(task_type))


def scheme_labels(task_type: str, gold_labels: Sequence[str], scheme: str) -> tuple[str, ...]:
    """The label vocabulary the classifier predicts for `scheme` (its index = the class id)."""
    _check(scheme)
    if scheme == "BIO" or (is_typed(task_type) and scheme == "IO"):
        return tuple(gold_labels)
    kinds = sorted({_split(label)[1] for label in gold_labels if label != "O"})
    prefixes = ("B", "I", "O", "U", "L") if scheme == "BIOUL" else ("I", "O")
    if not is_typed(task_type):
        return prefixes
    typed = [_tag(p, k) for k in kinds for p in prefixes if p != "O"]
    return (*typed, "O")
