"""Synthetic DDI extraction 2013 corpus: `DDIextraction_2013/{train_dataset,test_dataset}/
{DrugBank,MedLine}/*.xml`, one `<document>` per file in the real XML layout (`<sentence text>`,
`<entity charOffset="a-b" type text>` with inclusive ends, `<pair e1 e2 ddi [type]>` for every
pair of entities in a sentence).

The interaction type follows a cue phrase (increases the plasma concentrations of -> mechanism,
potentiates the effect of -> effect, should not be coadministered with -> advise, interacts
with -> int); other pairs are false. Sentences without entities or with a single entity carry no
pair (BLURB drops them), and "calcium and sodium channel blockers" style groups give a
discontinuous entity (`a-b;c-d`) overlapping its neighbour. File names are seed-independent, so
the BLURB index lists (`blurb_index`) name the same files whatever the seed.
"""

from __future__ import annotations

import random
from pathlib import Path
from xml.sax.saxutils import escape

from blurbflow.data.generate.vocab import (
    CHEM_STEMS,
    CHEM_SUFFIXES,
    capitalize_first,
    chemical,
    source_rng,
    synthetic_pmids,
)

ROOT = "DDIextraction_2013"
SPLIT_SIZES = {"train": 200, "dev": 30, "test": 60}  # documents in BLURB's lists
MEDLINE_SHARE = 0.2

RELATIONS = {
    "mechanism": (
        "{A} increases the plasma concentrations of {B}",
        "Coadministration of {A} reduced the clearance of {B}",
        "{A} inhibits the hepatic metabolism of {B}",
    ),
    "effect": (
        "{A} may potentiate the hypotensive effect of {B}",
        "Concomitant use of {A} enhanced the sedative effect of {B}",
        "{A} can increase the risk of bleeding when used with {B}",
    ),
    "advise": (
        "{A} should not be coadministered with {B}",
        "Caution is advised when {A} is prescribed together with {B}",
        "Patients taking {A} should avoid {B}",
    ),
    "int": ("{A} interacts with {B}", "An interaction between {A} and {B} has been described"),
    "false": (
        "{A} and {B} were given to healthy volunteers in separate periods",
        "The study compared {A} with {B} in {n} patients",
        "{A} was better tolerated than {B}",
    ),
}
LABEL_WEIGHTS = {"false": 50, "mechanism": 15, "effect": 15, "advise": 13, "int": 7}
NO_PAIR = (
    "Clinical interaction studies have not been performed",
    "No formal studies were conducted in elderly patients",
    "{A} is well absorbed after oral administration",
    "The half-life of {A} is about {n} hours (AUC & Cmax were dose proportional)",
)
GROUP_CUES = {
    "mechanism": " increase the plasma concentrations of {B}",
    "effect": " may potentiate the hypotensive effect of {B}",
    "advise": " should not be coadministered with {B}",
    "int": " interact with {B}",
    "false": " were compared with {B}",
}
GROUP_PREFIXES = ("calcium", "sodium", "potassium", "beta", "alpha", "proton")
GROUP_HEADS = ("channel blockers", "receptor antagonists", "pump inhibitors")
ENTITY_TYPES = ("drug",) * 8 + ("brand", "drug_n")


def _names() -> list[str]:
    """Distinct DrugBank-style document names (some with a space), independent of any seed."""
    rng = random.Random("blurbflow:ddi-names")
    names: list[str] = []
    while len(names) < 2 * sum(SPLIT_SIZES.values()):
        stem, suffix = rng.choice(CHEM_STEMS), rng.choice(CHEM_SUFFIXES)
        name = capitalize_first(stem + suffix)
        if rng.random() < 0.1:
            name += rng.choice((" acid", " sodium", " hydrochloride"))
        if name not in names:
            names.append(name)
    return names


def ddi_documents() -> list[tuple[str, str]]:
    """(split, path relative to DDIextraction_2013/) for every document, train, dev, then test.

    Train and dev files lie in `train_dataset` (DrugBank names end in `_ddi`), test files in
    `test_dataset`, as in the real corpus. Seed-independent: shared with the index generator.
    """
    total = sum(SPLIT_SIZES.values())
    names, pmids = iter(_names()), iter(synthetic_pmids("ddi-medline", total))
    rng = random.Random("blurbflow:ddi-collections")
    out = []
    for split, size in SPLIT_SIZES.items():
        dataset = "test_dataset" if split == "test" else "train_dataset"
        for _ in range(size):
            if rng.random() < MEDLINE_SHARE:
                out.append((split, f"{dataset}/MedLine/{next(pmids)}.xml"))
            else:
                suffix = "" if split == "test" else "_ddi"
                out.append((split, f"{dataset}/DrugBank/{next(names)}{suffix}.xml"))
    return out


def ddi_split_files() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {split: [] for split in SPLIT_SIZES}
    for split, path in ddi_documents():
        out[split].append(path)
    return out


class _Sentence:
    """Text built piece by piece, with entity spans as (start, end) half-open lists."""

    def __init__(self) -> None:
        self.text = ""
        self.entities: list[tuple[list[tuple[int, int]], str]] = []  # (spans, type)

    def add(self, piece: str) -> tuple[int, int]:
        start = len(self.text)
        self.text += piece
        return start, len(self.text)

    def entity(self, name: str, kind: str) -> int:
        self.entities.append(([self.add(name)], kind))
        return len(self.entities) - 1


def _fill(rng: random.Random, sentence: _Sentence, template: str, drugs: dict[str, int]) -> None:
    """Append `template` with {A}/{B}/{C} as new drug entities (their indexes into `drugs`)."""
    rest = template.replace("{n}", str(rng.randint(6, 400)))
    while rest:
        cut = rest.find("{")
        if cut < 0:
            sentence.add(rest)
            break
        sentence.add(rest[:cut])
        slot, rest = rest[cut + 1], rest[cut + 3 :]
        drugs[slot] = sentence.entity(" ".join(chemical(rng)), rng.choice(ENTITY_TYPES))


def _group_sentence(rng: random.Random, label: str) -> tuple[_Sentence, list]:
    """'Calcium and sodium channel blockers <cue> X': the first group is discontinuous and
    overlaps the second; both relate to X with the cue's label and not to each other."""
    sentence = _Sentence()
    first, second = rng.sample(GROUP_PREFIXES, 2)
    head = rng.choice(GROUP_HEADS)
    a = sentence.add(capitalize_first(first))
    sentence.add(" and ")
    b = sentence.add(second)
    sentence.add(" ")
    c = sentence.add(head)
    sentence.entities.append(([a, c], "group"))  # discontinuous: "Calcium ... channel blockers"
    sentence.entities.append(([(b[0], c[1])], "group"))
    drugs: dict[str, int] = {}
    _fill(rng, sentence, GROUP_CUES[label] + ".", drugs)
    pairs = [(0, 1, "false"), (0, drugs["B"], label), (1, drugs["B"], label)]
    return sentence, pairs


def _sentence(rng: random.Random) -> tuple[_Sentence, list[tuple[int, int, str]]]:
    roll = rng.random()
    if roll < 0.15:  # no pair: dropped by BLURB's rule
        sentence, drugs = _Sentence(), {}
        _fill(rng, sentence, rng.choice(NO_PAIR) + ".", drugs)
        return sentence, []
    label = rng.choices(list(LABEL_WEIGHTS), weights=list(LABEL_WEIGHTS.values()))[0]
    if roll < 0.22:
        return _group_sentence(rng, label)
    template = rng.choice(RELATIONS[label])
    third = rng.random() < 0.3
    if third:  # a third drug, in no interaction with the other two
        template = "Unlike {C}, " + (
            template if template.startswith("{") else template[0].lower() + template[1:]
        )
    sentence, drugs = _Sentence(), {}
    _fill(rng, sentence, capitalize_first(template) + ".", drugs)
    pairs = [(drugs["A"], drugs["B"], label)]
    if third:
        pairs += [(drugs["C"], drugs["A"], "false"), (drugs["C"], drugs["B"], "false")]
    return sentence, pairs


def _attr(value: str) -> str:
    return '"' + escape(value, {'"': "&quot;", "\n": "&#xa;"}) + '"'


def _document_xml(rng: random.Random, doc_id: str, medline: bool) -> str:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', f"<document id={_attr(doc_id)}>"]
    for s in range(rng.randint(2, 6)):
        sentence, pairs = _sentence(rng)
        sentence.text = capitalize_first(sentence.text)  # offsets unchanged
        sid = f"{doc_id}.s{s}"
        text = sentence.text + ("\n" if medline and s == 0 else " " if rng.random() < 0.3 else "")
        if not sentence.entities:
            lines.append(f"    <sentence id={_attr(sid)} text={_attr(text)}/>")
            continue
        lines.append(f"    <sentence id={_attr(sid)} text={_attr(text)}>")
        # entities in order of their first start, as in the corpus
        order = sorted(range(len(sentence.entities)), key=lambda i: sentence.entities[i][0][0])
        rank = {old: new for new, old in enumerate(order)}
        for old in order:
            spans, kind = sentence.entities[old]
            offset = ";".join(f"{a}-{b - 1}" for a, b in spans)
            name = " ".join(sentence.text[a:b] for a, b in spans)
            lines.append(
                f"        <entity id={_attr(f'{sid}.e{rank[old]}')} charOffset={_attr(offset)}"
            )
            lines.append(f"            type={_attr(kind)} text={_attr(name)}/>")
        ordered = sorted(((*sorted((rank[x], rank[y])), label) for x, y, label in pairs))
        for p, (e1, e2, label) in enumerate(ordered):
            kind = 'ddi="false"' if label == "false" else f'ddi="true" type="{label}"'
            lines.append(f"        <pair id={_attr(f'{sid}.p{p}')} e1={_attr(f'{sid}.e{e1}')}")
            lines.append(f"            e2={_attr(f'{sid}.e{e2}')} {kind}/>")
        lines.append("    </sentence>")
    lines.append("</document>")
    return "\n".join(lines) + "\n"


def generate(out_dir: Path, seed: int) -> None:
    rng = source_rng("ddi", seed)
    for number, (_, relative) in enumerate(ddi_documents()):
        medline = "/MedLine/" in relative
        doc_id = f"DDI-{'MedLine' if medline else 'DrugBank'}.d{number}"
        path = out_dir / ROOT / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_document_xml(rng, doc_id, medline), encoding="utf-8")
