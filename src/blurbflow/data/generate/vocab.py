"""Made-up but plausible biomedical words shared by the synthetic sources.

Entity names are built from stems and class suffixes (-azole, -itis, ...), so a model can learn
the pattern and recognise names it never saw in training.
"""

from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Callable

CHEM_STEMS = (
    "ambro",
    "benza",
    "cetri",
    "clora",
    "dextro",
    "diclo",
    "ethos",
    "fenox",
    "glyba",
    "halop",
    "iprat",
    "keto",
    "lamo",
    "lorav",
    "metro",
    "morpha",
    "nifed",
    "oxaz",
    "prazo",
    "quina",
    "ribav",
    "sulfa",
    "tiova",
    "trima",
    "valpr",
    "warfe",
    "xylo",
    "zelan",
    "corti",
    "pheno",
)
CHEM_SUFFIXES = (
    "azole",
    "mycin",
    "pril",
    "olol",
    "statin",
    "idine",
    "amide",
    "oxacin",
    "profen",
    "sartan",
    "parin",
    "azepam",
)
DISEASE_STEMS = (
    "nephr",
    "hepat",
    "carcin",
    "lymph",
    "neur",
    "derm",
    "arthr",
    "myel",
    "cardi",
    "gastr",
    "oste",
    "angi",
    "pulmon",
    "encephal",
    "retin",
    "thyr",
    "pancreat",
    "col",
    "mening",
    "vascul",
)
DISEASE_SUFFIXES = ("itis", "oma", "emia", "osis", "opathy", "algia", "plasia")
EPONYMS = ("Varden", "Holtzer", "Kessing", "Marlow", "Tobrin", "Askell", "Fenwick", "Ruddle")
DISEASE_MODIFIERS = ("chronic", "acute", "familial", "idiopathic", "juvenile", "progressive")
GENE_HEADS = ("protein", "kinase", "receptor", "factor")
CELL_TYPES = (
    "T cells",
    "B cells",
    "monocytes",
    "lymphocytes",
    "macrophages",
    "neutrophils",
    "erythroid progenitors",
    "thymocytes",
)
CELL_LINE_NAMES = ("Torvak", "Melden", "Quarry", "Halvex", "Brisco", "Nandor")
CANCERS = ("breast", "lung", "colon", "prostate", "liver", "gastric", "ovarian", "renal")
FILLER_NOUNS = (
    "expression", "levels", "activity", "response", "patients", "cohort", "tissue", "samples",
    "mice", "rats", "treatment", "therapy", "outcome", "analysis",
)  # fmt: skip


def _gene_symbol(rng: random.Random) -> str:
    letters = "".join(rng.choice(string.ascii_uppercase) for _ in range(rng.randint(2, 4)))
    return f"{letters}{rng.randint(1, 12)}"


def _join(stem: str, suffix: str) -> str:
    """Stem + suffix without a doubled vowel (benz-azole, not benzaazole)."""
    vowels = "aeiou"
    return stem[:-1] + suffix if stem[-1] in vowels and suffix[0] in vowels else stem + suffix


def capitalize_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def chemical(rng: random.Random) -> list[str]:
    name = _join(rng.choice(CHEM_STEMS), rng.choice(CHEM_SUFFIXES))
    roll = rng.random()
    if roll < 0.1:
        return [name, "hydrochloride"]
    if roll < 0.18:
        return ["sodium", rng.choice(CHEM_STEMS) + "ate"]
    if roll < 0.24:
        return [rng.choice(CHEM_STEMS) + "ic", "acid"]
    return [name]


def disease(rng: random.Random) -> list[str]:
    name = _join(rng.choice(DISEASE_STEMS), rng.choice(DISEASE_SUFFIXES))
    roll = rng.random()
    if roll < 0.2:
        return [rng.choice(DISEASE_MODIFIERS), name]
    if roll < 0.32:
        return [rng.choice(EPONYMS), "syndrome"]
    if roll < 0.4:
        return [rng.choice(EPONYMS), "'", "s", "disease"]
    return [name]


def gene(rng: random.Random) -> list[str]:
    symbol = _gene_symbol(rng)
    roll = rng.random()
    if roll < 0.2:
        return [symbol, rng.choice(GENE_HEADS)]
    if roll < 0.3:
        return [symbol[:-1], "-", symbol[-1]]
    return [symbol]


def protein(rng: random.Random) -> list[str]:
    return [_gene_symbol(rng), rng.choice(GENE_HEADS)] if rng.random() < 0.4 else gene(rng)


def dna(rng: random.Random) -> list[str]:
    return [_gene_symbol(rng), rng.choice(("gene", "promoter", "enhancer", "locus"))]


def rna(rng: random.Random) -> list[str]:
    return [_gene_symbol(rng), rng.choice(("mRNA", "transcripts"))]


def cell_type(rng: random.Random) -> list[str]:
    words = rng.choice(CELL_TYPES).split()
    return ["activated", *words] if rng.random() < 0.3 else words


def cell_line(rng: random.Random) -> list[str]:
    return [f"{rng.choice(CELL_LINE_NAMES)}-{rng.randint(2, 99)}", "cells"]


ENTITY_MAKERS = {
    "chem": chemical,
    "dis": disease,
    "gene": gene,
    "protein": protein,
    "dna": dna,
    "rna": rna,
    "cell_type": cell_type,
    "cell_line": cell_line,
}


def detokenize(tokens: list[str]) -> str:
    """Join tokens as running text: no space before closing punctuation."""
    text = " ".join(tokens)
    for mark in (" .", " ,", " ;", " :", " )", " ?"):
        text = text.replace(mark, mark[1:])
    return text.replace("( ", "(").replace(" ' s", "'s")


def mentions(
    rng: random.Random, *kinds: str, join: Callable[[list[str]], str] = detokenize
) -> dict[str, str]:
    """A made-up entity per kind (keys of ENTITY_MAKERS), drawn in this order, its tokens joined
    as running text (or `join=" ".join` for tokenised text)."""
    return {kind: join(ENTITY_MAKERS[kind](rng)) for kind in kinds}


def split_in_order(items: list[str], sizes: dict[str, int]) -> dict[str, list[str]]:
    """split -> the next `size` items: BLURB's lists of generated documents, train first."""
    out, start = {}, 0
    for split, size in sizes.items():
        out[split] = items[start : start + size]
        start += size
    return out


def synthetic_pmids(kind: str, count: int, exclude: frozenset[str] = frozenset()) -> list[str]:
    """`count` distinct 8-digit PMIDs for `kind`, independent of any seed.

    Seed-independent on purpose: the HoC texts and BLURB's HoC index lists are generated as two
    sources and must name the same PMIDs whatever seeds they were generated with.
    """
    pmids: list[str] = []
    seen = set(exclude)
    index = 0
    while len(pmids) < count:
        digest = hashlib.sha256(f"{kind}:{index}".encode()).hexdigest()
        pmid = str(10_000_000 + int(digest[:12], 16) % 20_000_000)
        index += 1
        if pmid not in seen:
            seen.add(pmid)
            pmids.append(pmid)
    return pmids


def source_rng(source: str, seed: int) -> random.Random:
    """A generator per (source, seed); string seeding is stable across Python runs."""
    return random.Random(f"blurbflow:{source}:{seed}")
