"""Synthetic ChemProt corpus in the layout of the extracted `ChemProt_Corpus.zip` (inner zips
extracted in place):

    ChemProt_Corpus/chemprot_training/chemprot_training_{abstracts,entities,relations,
        gold_standard}.tsv
    ChemProt_Corpus/chemprot_development/chemprot_development_{...}.tsv
    ChemProt_Corpus/chemprot_test_gs/chemprot_test_{abstracts,entities,relations}_gs.tsv and
        chemprot_test_gold_standard.tsv

Each abstract is a title plus 3-5 sentences built from templates. The relation follows the cue
between the chemical and the gene ("inhibits" -> CPR:4, "activates" -> CPR:3, "agonist" ->
CPR:5, "antagonist" -> CPR:6, "is a substrate of" -> CPR:9); many pairs have no relation or an
N-flagged one (CPR:1, 2, 10 -> `false`). Some genes contain a chemical ("<chemical> receptor"),
so entities overlap; some relations name the gene first in the sentence; some keys get a stale
earlier relation line that a later line overrides. "s.c.", "vs." and "Dr." are abbreviations
Punkt's English parameters keep inside a sentence; after "e.g." and "i.v." Punkt does break (as
in BLURB), so those only occur where a break loses no relation. Deterministic in `seed`.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from blurbflow.data.generate.vocab import (
    CANCERS,
    CELL_TYPES,
    EPONYMS,
    FILLER_NOUNS,
    capitalize_first,
    chemical,
    detokenize,
    gene,
    source_rng,
    synthetic_pmids,
)

CORPUS = "ChemProt_Corpus"
# split -> (folder, file name prefix, file name suffix, gold standard name, abstracts)
SPLITS = {
    "train": (
        "chemprot_training",
        "chemprot_training_",
        "",
        "chemprot_training_gold_standard",
        300,
    ),
    "dev": (
        "chemprot_development",
        "chemprot_development_",
        "",
        "chemprot_development_gold_standard",
        150,
    ),
    "test": ("chemprot_test_gs", "chemprot_test_", "_gs", "chemprot_test_gold_standard", 150),
}
GOLD_GROUPS = ("CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9")
LABEL_NOISE = 0.04  # a positive template whose relation line is left out
STALE = 0.1  # a relation that an earlier, overridden line also names
SPECIES = ("rats", "mice", "rabbits", "guinea pigs", "healthy volunteers")
RECEPTOR_HEADS = ("receptor", "transporter", "binding protein")

# Templates: {C}, {C2} chemicals; {G}, {G2} genes (GENE-Y or GENE-N); {N} a GENE-N named after a
# chemical that is itself annotated ("<chemical> receptor", overlapping entities); lower-case
# slots are filler. Relations: (group, flag, relation type, chemical slot, gene slot).
Relation = tuple[str, str, str, str, str]


@dataclass(frozen=True)
class Template:
    text: str
    relations: tuple[Relation, ...] = ()
    weight: float = 1.0


def _rel(group: str, kind: str, chem: str = "C", gene_slot: str = "G", flag: str = "Y") -> Relation:
    return (group, flag, kind, chem, gene_slot)


def _each(*texts: str, relation: Relation | None = None, weight: float = 1.0) -> list[Template]:
    """Templates that differ only in their text (the same relation, the same weight)."""
    return [Template(text, (relation,) if relation else (), weight) for text in texts]


TEMPLATES = (
    # CPR:4 inhibition
    *_each(
        "{C} inhibits {G} in {cells}.",
        "{C} potently inhibited {G} activity (IC50 = {n} nM).",
        "{G} activity was blocked by {C} in {cells}.",
        relation=_rel("CPR:4", "INHIBITOR"),
    ),
    Template(
        "{C}, given s.c., suppressed {G} in {species}.", (_rel("CPR:4", "INDIRECT-DOWNREGULATOR"),)
    ),
    Template(
        "Blocking the {N} with {C} reduced the proliferation of {cells}.",
        (_rel("CPR:4", "INHIBITOR", "C", "N"),),
    ),
    # CPR:3 activation
    Template("{C} activates {G} in {cells}.", (_rel("CPR:3", "ACTIVATOR"),)),
    Template(
        "{C} increased the expression of {G} in {cells}.", (_rel("CPR:3", "INDIRECT-UPREGULATOR"),)
    ),
    Template("{G} was strongly activated by {C}.", (_rel("CPR:3", "ACTIVATOR"),)),
    Template(
        "{C} and {C2} both activate {G}.",
        (_rel("CPR:3", "ACTIVATOR"), _rel("CPR:3", "ACTIVATOR", "C2")),
    ),
    # CPR:5 agonist
    *_each(
        "{C} is a selective agonist of {G}.",
        "{C} acts as a full agonist at {G} in {cells}.",
        relation=_rel("CPR:5", "AGONIST"),
    ),
    # CPR:6 antagonist
    *_each(
        "{C} is a competitive antagonist of {G}.",
        "{G} responses were antagonized by {C} ({n} mg/kg s.c.).",
        relation=_rel("CPR:6", "ANTAGONIST"),
    ),
    Template(
        "{C} is an antagonist of the {N} in {cells}.", (_rel("CPR:6", "ANTAGONIST", "C", "N"),)
    ),
    # CPR:9 substrate / product
    *_each(
        "{C} is a substrate of {G}.",
        "{G} metabolizes {C} in human liver microsomes.",
        relation=_rel("CPR:9", "SUBSTRATE"),
    ),
    Template("{C} is formed from its precursor by {G}.", (_rel("CPR:9", "PRODUCT-OF"),)),
    # a relation and a negative pair in one sentence
    Template(
        "{C} inhibits {G} but not {G2}.",
        (_rel("CPR:4", "INHIBITOR"), _rel("CPR:10", "NOT", "C", "G2", "N")),
    ),
    # pairs without a relation
    *_each(
        "{C} and {G} were measured in {n} patients.",
        "The levels of {G} were similar in {C}-treated vs. untreated {species}.",
        "{G} expression was determined before {C} treatment.",
        weight=3.0,
    ),
    Template("Dr. {eponym} compared {C} with {G} in {cancer} tissue.", weight=2.0),
    # N-flagged relations: `false` in BLURB
    Template(
        "{C} binds to {G} in vitro.", (_rel("CPR:2", "DIRECT-REGULATOR", flag="N"),), weight=2.0
    ),
    Template("{C} is part of the {G} complex.", (_rel("CPR:1", "PART-OF", flag="N"),), weight=2.0),
    Template("{C} did not affect {G} activity.", (_rel("CPR:10", "NOT", flag="N"),), weight=2.5),
    # one entity type only, or pairs Punkt puts into different sentences
    Template("{C} was given s.c. to {species} at {n} mg/kg.", weight=0.7),
    Template("{G} is highly expressed in {cancer} tumours.", weight=0.7),
    Template("Several agents, e.g. {C} and {C2}, were tested in {cells}.", weight=0.5),
    Template("{species} received {C} i.v. and {G} activity was recorded.", weight=0.7),
)
SLOT = re.compile(r"\{(\w+)\}")


@dataclass
class Document:
    pmid: str
    text: str = ""
    entities: list[tuple[str, str, int, int, str]] = field(default_factory=list)
    relations: list[tuple[str, str, str, str, str]] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.text += text

    def entity(self, mention: str, kind: str, start: int | None = None) -> str:
        """Annotate `mention` at `start` (default: append it to the text); return its id."""
        if start is None:
            start = len(self.text)
            self.add(mention)
        entity_id = f"T{len(self.entities) + 1}"
        self.entities.append((entity_id, kind, start, start + len(mention), mention))
        return entity_id


def _chemical(rng: random.Random) -> str:
    return detokenize(chemical(rng))


def _gene(rng: random.Random) -> tuple[str, str]:
    return (
        detokenize(gene(rng)).replace(" - ", "-"),
        "GENE-Y" if rng.random() < 0.65 else "GENE-N",
    )


def _filler(slot: str, rng: random.Random) -> str:
    return {
        "cells": lambda: rng.choice(CELL_TYPES),
        "n": lambda: str(rng.randint(2, 500)),
        "species": lambda: rng.choice(SPECIES),
        "cancer": lambda: rng.choice(CANCERS),
        "filler": lambda: rng.choice(FILLER_NOUNS),
        "eponym": lambda: rng.choice(EPONYMS),
    }[slot]()


def _sentence(doc: Document, template: Template, rng: random.Random) -> None:
    ids: dict[str, str] = {}
    pieces = SLOT.split(template.text)  # text, slot, text, slot, ...
    for index, piece in enumerate(pieces):
        first = index == 1 and not pieces[0]  # the slot opens the sentence
        if index % 2 == 0:
            doc.add(piece)
        elif piece in ("C", "C2"):
            mention = _chemical(rng)
            ids[piece] = doc.entity(capitalize_first(mention) if first else mention, "CHEMICAL")
        elif piece in ("G", "G2"):
            mention, kind = _gene(rng)
            ids[piece] = doc.entity(mention, kind)
        elif piece == "N":  # "<chemical> receptor": a GENE-N that contains a CHEMICAL
            inner = _chemical(rng)
            start = len(doc.text)
            ids["N"] = doc.entity(f"{inner} {rng.choice(RECEPTOR_HEADS)}", "GENE-N")
            doc.entity(inner, "CHEMICAL", start)
        else:
            value = _filler(piece, rng)
            doc.add(capitalize_first(value) if first else value)
    if template.relations and rng.random() < LABEL_NOISE:
        return
    for group, flag, kind, chem, gene_slot in template.relations:
        if rng.random() < STALE:  # an earlier line for the same key that the real one overrides
            doc.relations.append(("CPR:2", "N", "DIRECT-REGULATOR", ids[chem], ids[gene_slot]))
        doc.relations.append((group, flag, kind, ids[chem], ids[gene_slot]))


def _document(pmid: str, rng: random.Random) -> Document:
    doc = Document(pmid)
    weights = [t.weight for t in TEMPLATES]
    sentences = rng.choices(TEMPLATES, weights, k=1 + rng.randint(3, 5))
    for number, template in enumerate(sentences):
        if number:
            doc.add("\t" if number == 1 else " ")
        _sentence(doc, template, rng)
    return doc


def _write(path: Path, rows: list[tuple]) -> None:
    path.write_text("".join("\t".join(map(str, row)) + "\n" for row in rows), encoding="utf-8")


def generate(out_dir: Path, seed: int) -> None:
    rng = source_rng("chemprot", seed)
    for split, (folder, prefix, suffix, gold, size) in SPLITS.items():
        docs = [_document(pmid, rng) for pmid in synthetic_pmids(f"chemprot-{split}", size)]
        base = Path(out_dir) / CORPUS / folder
        base.mkdir(parents=True, exist_ok=True)
        # title<TAB>abstract: the first tab of a document's text separates them
        _write(base / f"{prefix}abstracts{suffix}.tsv", [(d.pmid, d.text) for d in docs])
        _write(
            base / f"{prefix}entities{suffix}.tsv",
            [(d.pmid, *entity) for d in docs for entity in d.entities],
        )
        # the flag column carries a trailing space, as in the original files
        _write(
            base / f"{prefix}relations{suffix}.tsv",
            [
                (d.pmid, group, f"{flag} ", kind, f"Arg1:{chem}", f"Arg2:{gene_id}")
                for d in docs
                for group, flag, kind, chem, gene_id in d.relations
            ],
        )
        gold_rows = {}
        for d in docs:
            for group, flag, _, chem, gene_id in d.relations:
                key = (d.pmid, chem, gene_id)
                gold_rows.pop(key, None)  # the last line for a key counts
                if flag == "Y" and group in GOLD_GROUPS:
                    gold_rows[key] = (d.pmid, group, f"Arg1:{chem}", f"Arg2:{gene_id}")
        _write(base / f"{gold}.tsv", list(gold_rows.values()))
