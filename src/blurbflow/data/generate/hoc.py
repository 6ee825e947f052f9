"""Synthetic Hallmarks-of-Cancer archive: `Hallmarks-of-Cancer-master/text/{PMID}.txt` (one
tokenised sentence a line) and `labels/{PMID}.txt` (one line, a `<chunk` per sentence; a chunk
holds `Hallmark--Subcategory` labels joined by `AND`, or is blank or `NULL`). A sentence carries a
hallmark exactly when it mentions one of that hallmark's keywords.
"""

from __future__ import annotations

import random
from pathlib import Path

from blurbflow.data.generate.vocab import (
    CANCERS,
    capitalize_first,
    mentions,
    source_rng,
    split_in_order,
    synthetic_pmids,
)

ROOT = "Hallmarks-of-Cancer-master"
SPLIT_SIZES = {"train": 1295, "dev": 186, "test": 371}  # abstracts, in BLURB's index lists

# hallmark (as written in the labels files) -> the subcategory its labels name
HALLMARKS = {
    "Activating invasion and metastasis": "Invasion",
    "Avoiding immune destruction": "Immune response",
    "Cellular energetics": "Glycolysis",
    "Enabling replicative immortality": "Telomerase",
    "Evading growth suppressors": "Cell cycle",
    "Genomic instability and mutation": "DNA damage",
    "Inducing angiogenesis": "Angiogenic factors",
    "Resisting cell death": "Apoptosis",
    "Sustaining proliferative signaling": "Receptors",
    "Tumor promoting inflammation": "Inflammatory mediators",
}
# subcategory -> keywords: a sentence carries the hallmark when it mentions one of them
KEYWORDS = {
    "Invasion": ("metastasis", "invasion", "cell migration", "epithelial-mesenchymal transition"),
    "Immune response": ("immune evasion", "immunosuppression", "T cell infiltration"),
    "Glycolysis": ("glycolysis", "Warburg effect", "glucose uptake", "lactate production"),
    "Telomerase": ("telomerase", "telomere length", "immortalization"),
    "Cell cycle": ("cell cycle arrest", "tumor suppressor", "CDK inhibitor"),
    "DNA damage": ("DNA damage", "chromosomal instability", "DNA repair", "mutation rate"),
    "Angiogenic factors": ("angiogenesis", "VEGF secretion", "microvessel density"),
    "Apoptosis": ("apoptosis", "caspase activation", "anoikis", "cell death"),
    "Receptors": ("proliferation", "growth factor signaling", "mitogenic signaling"),
    "Inflammatory mediators": ("inflammation", "cytokine release", "macrophage recruitment"),
}
# Rough frequencies of the real corpus: proliferation and cell death are the common hallmarks.
WEIGHTS = (6, 2, 2, 2, 3, 7, 3, 8, 9, 4)

LABELLED = (
    "{gene} promotes {kw} in {cancer} cancer cells .",
    "Inhibition of {gene} markedly reduced {kw} in vitro .",
    "We examined whether {chem} affects {kw} in {cancer} tumours .",
    "{kw} was strongly enhanced by {gene} overexpression .",
    "These findings link {gene} to {kw} and {kw2} .",
)
NEUTRAL = (
    "Tumour samples were obtained from {n} patients with {cancer} cancer .",
    "{gene} expression was measured by quantitative PCR .",
    "Statistical analysis was performed with standard methods .",
    "The cohort included {n} consecutive cases treated between {year} and {year2} .",
    "Cells were cultured with {chem} for {n} hours .",
)


def _sentence(rng: random.Random, hallmarks: list[str]) -> str:
    fill = {
        **mentions(rng, "gene", "chem", join=" ".join),
        "cancer": rng.choice(CANCERS),
        "n": str(rng.randint(5, 300)),
        "year": str(rng.randint(1990, 2005)),
        "year2": str(rng.randint(2006, 2015)),
    }
    if not hallmarks:
        return capitalize_first(rng.choice(NEUTRAL).format(**fill))
    keywords = [rng.choice(KEYWORDS[HALLMARKS[h]]) for h in hallmarks]
    template = rng.choice(LABELLED[-1:] if len(keywords) == 2 else LABELLED[:-1])
    return capitalize_first(template.format(kw=keywords[0], kw2=keywords[-1], **fill))


def _chunk(rng: random.Random, hallmarks: list[str]) -> str:
    if not hallmarks:
        return "NULL" if rng.random() < 0.03 else " "
    labels = [f"{h}--{HALLMARKS[h]}" for h in hallmarks]
    joiner = " AND " if rng.random() < 0.6 else " AND"  # the real files mix both spellings
    return joiner.join(labels)


def _abstract(rng: random.Random) -> tuple[list[str], list[str]]:
    sentences, chunks = [], []
    labelled_abstract = rng.random() > 0.15  # some abstracts carry no hallmark at all
    for _ in range(rng.randint(3, 6)):
        count = 0
        if labelled_abstract and rng.random() < 0.45:
            count = 2 if rng.random() < 0.15 else 1
        chosen = list(dict.fromkeys(rng.choices(list(HALLMARKS), weights=WEIGHTS, k=count)))
        sentences.append(_sentence(rng, chosen))
        chunks.append(_chunk(rng, chosen))
    return sentences, chunks


def hoc_pmids() -> list[str]:
    """All abstract PMIDs, train then dev then test; shared with the blurb-index generator."""
    return synthetic_pmids("hoc", sum(SPLIT_SIZES.values()))


def hoc_split_pmids() -> dict[str, list[str]]:
    return split_in_order(hoc_pmids(), SPLIT_SIZES)


def generate(out_dir: Path, seed: int) -> None:
    rng = source_rng("hoc", seed)
    text_dir, label_dir = out_dir / ROOT / "text", out_dir / ROOT / "labels"
    text_dir.mkdir(parents=True, exist_ok=True)
    label_dir.mkdir(parents=True, exist_ok=True)
    for pmid in hoc_pmids():
        sentences, chunks = _abstract(rng)
        (text_dir / f"{pmid}.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
        # One line without a final newline, as in the real archive.
        (label_dir / f"{pmid}.txt").write_text("".join(f"<{c}" for c in chunks), encoding="utf-8")
