"""DDI extraction 2013 corpus with BLURB's split lists.

Raw layout: `ddi/DDIextraction_2013/{train_dataset,test_dataset}/{DrugBank,MedLine}/*.xml` and
`blurb-index/data_generation/indexing/DDI/{train,dev,test}_files.tsv`, newline-separated paths
relative to `DDIextraction_2013/` (the dev files come from `train_dataset`).

Each XML file is one `<document>` of `<sentence text=...>` elements holding `<entity
charOffset="a-b" .../>` (inclusive end; a discontinuous entity has `a-b;c-d`) and `<pair e1 e2
ddi="true|false" type=...>` elements. BLURB's rules: only sentences with at least one `<pair>`;
every pair is an instance; label `DDI-false` when ddi="false", else `DDI-{type}`; the two drugs
are replaced by `@DRUG$` (when their spans overlap, the union becomes one `@DRUG-DRUG$`); a
discontinuous entity spans its first start to its last end.

Offsets in the frame (`e1_start`, `e1_end`, `e2_start`, `e2_end`) are half-open character offsets
into `original_text` (the sentence as in the XML); e1 is the entity that starts first (the pair's
e1 on a tie, as in the corpus, where e1 always starts first); `e1_type`/`e2_type` are the
entities' `type` attributes (drug, brand, group, drug_n).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from xml.parsers import expat

import pandas as pd

from blurbflow.data.errors import DataFormatError, redownload
from blurbflow.data.parsers.common import SPLITS, iter_lines, make_frame, read_text
from blurbflow.tasks.registry import TaskSpec

SOURCE, INDEX = "ddi", "blurb-index"
ROOT = "DDIextraction_2013"
INDEX_DIR = "data_generation/indexing/DDI"
TYPES = ("mechanism", "effect", "advise", "int")
DRUG, OVERLAP = "@DRUG$", "@DRUG-DRUG$"
OFFSET = re.compile(r"\d+-\d+(;\d+-\d+)*")


@dataclass
class Entity:
    id: str
    start: int  # first start
    end: int  # last end, exclusive
    type: str
    line: int


@dataclass
class Pair:
    id: str
    e1: str
    e2: str
    label: str
    line: int


@dataclass
class Sentence:
    id: str
    text: str
    line: int
    entities: dict[str, Entity] = field(default_factory=dict)
    pairs: list[Pair] = field(default_factory=list)


def split_files(raw_root: Path, split: str) -> list[str]:
    """The split's XML paths (relative to `DDIextraction_2013/`) from BLURB's list."""
    path = raw_root / INDEX / INDEX_DIR / f"{split}_files.tsv"
    names = []
    for number, line in iter_lines(path, INDEX):
        name = line.strip()
        if not name:
            continue
        parts = PurePosixPath(name).parts
        if not name.endswith(".xml") or name.startswith("/") or ".." in parts or "\\" in name:
            raise DataFormatError.at(
                path,
                number,
                f"entry {name!r} is not a relative path to a DDI .xml file",
                redownload(INDEX),
            )
        names.append(name)
    return names


def dummify(text: str, span1: tuple[int, int], span2: tuple[int, int]) -> str:
    """`text` with both half-open spans replaced by @DRUG$, or their union by @DRUG-DRUG$ when
    they overlap."""
    (a1, b1), (a2, b2) = sorted([span1, span2])
    if a2 < b1:
        return text[:a1] + OVERLAP + text[max(b1, b2) :]
    return text[:a1] + DRUG + text[b1:a2] + DRUG + text[b2:]


def _entity_span(path: Path, line: int, offset: str, text: str) -> tuple[int, int]:
    if not OFFSET.fullmatch(offset):
        raise DataFormatError.at(
            path, line, f"charOffset {offset!r} is not 'a-b' or 'a-b;c-d'", redownload(SOURCE)
        )
    bounds = [tuple(int(x) for x in part.split("-")) for part in offset.split(";")]
    if any(a > b for a, b in bounds):
        raise DataFormatError.at(
            path, line, f"charOffset {offset!r} ends before it starts", redownload(SOURCE)
        )
    start, end = min(a for a, _ in bounds), max(b for _, b in bounds) + 1
    if end > len(text):
        raise DataFormatError.at(
            path,
            line,
            f"charOffset {offset!r} runs past the sentence ({len(text)} characters)",
            redownload(SOURCE),
        )
    return start, end


def read_document(path: Path) -> list[Sentence]:
    """The document's sentences with their entities and pairs (line numbers kept for errors)."""
    text = read_text(path, SOURCE)
    parser = expat.ParserCreate()
    sentences: list[Sentence] = []
    current: list[Sentence] = []  # the open <sentence>, if any
    seen_root: list[str] = []

    def bad(problem: str) -> DataFormatError:
        return DataFormatError.at(path, parser.CurrentLineNumber, problem, redownload(SOURCE))

    def need(name: str, attrs: dict, *keys: str) -> list[str]:
        missing = [k for k in keys if k not in attrs]
        if missing:
            raise bad(f"<{name}> lacks the attribute(s) {', '.join(missing)}")
        return [attrs[k] for k in keys]

    def start(name: str, attrs: dict) -> None:
        line = parser.CurrentLineNumber
        if not seen_root:
            if name != "document":
                raise bad(f"root element is <{name}>, expected <document>")
            seen_root.append(name)
            return
        if name == "sentence":
            if current:
                raise bad("<sentence> nested inside another <sentence>")
            sid, stext = need(name, attrs, "id", "text")
            current.append(Sentence(sid, stext, line))
        elif name in ("entity", "pair"):
            if not current:
                raise bad(f"<{name}> outside a <sentence>")
            sentence = current[0]
            if name == "entity":
                eid, offset, kind = need(name, attrs, "id", "charOffset", "type")
                span = _entity_span(path, line, offset, sentence.text)
                sentence.entities[eid] = Entity(eid, *span, kind, line)
            else:
                pid, e1, e2, ddi = need(name, attrs, "id", "e1", "e2", "ddi")
                sentence.pairs.append(Pair(pid, e1, e2, _label(attrs, ddi, bad), line))

    def end(name: str) -> None:
        if name == "sentence":
            sentences.append(current.pop())

    def no_dtd(*_args) -> None:
        raise bad("document type declarations are not allowed in DDI files")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.StartDoctypeDeclHandler = no_dtd
    try:
        parser.Parse(text, True)
    except expat.ExpatError as err:
        raise DataFormatError.at(
            path,
            err.lineno,
            f"malformed XML ({expat.ErrorString(err.code)}, column {err.offset + 1})",
            redownload(SOURCE),
        ) from None
    return sentences


def _label(attrs: dict, ddi: str, bad) -> str:
    if ddi == "false":
        return "DDI-false"
    if ddi != "true":
        raise bad(f"ddi={ddi!r} is not 'true' or 'false'")
    kind = attrs.get("type")
    if kind not in TYPES:
        raise bad(f"interacting pair with type={kind!r}, expected one of {', '.join(TYPES)}")
    return f"DDI-{kind}"


def instances(path: Path, sentences: list[Sentence]) -> list[dict]:
    """One row per <pair>; sentences without pairs contribute nothing."""
    rows = []
    for sentence in sentences:
        for pair in sentence.pairs:
            entities = []
            for ref in (pair.e1, pair.e2):
                entity = sentence.entities.get(ref)
                if entity is None:
                    raise DataFormatError.at(
                        path,
                        pair.line,
                        f"pair {pair.id} names entity {ref!r}, which is not "
                        f"in sentence {sentence.id}",
                        redownload(SOURCE),
                    )
                entities.append(entity)
            first, second = sorted(entities, key=lambda e: e.start)  # stable: ties keep e1
            rows.append(
                {
                    "id": pair.id,
                    "label": pair.label,
                    "original_text": sentence.text,
                    "text": dummify(
                        sentence.text, (first.start, first.end), (second.start, second.end)
                    ),
                    "e1_start": first.start,
                    "e1_end": first.end,
                    "e2_start": second.start,
                    "e2_end": second.end,
                    "e1_type": first.type,
                    "e2_type": second.type,
                }
            )
    return rows


def parse(spec: TaskSpec, raw_root: Path) -> dict[str, pd.DataFrame]:
    frames = {}
    for split in SPLITS:
        rows = []
        for name in split_files(raw_root, split):
            path = raw_root / SOURCE / ROOT / name
            rows.extend(instances(path, read_document(path)))
        frames[split] = make_frame(spec.type, split, rows)
    return frames
