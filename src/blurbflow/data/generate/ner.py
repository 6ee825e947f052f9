"""Synthetic Crichton et al. NER files: `train.tsv devel.tsv test.tsv`, token<TAB>tag lines,
a blank line after each sentence, typed tags (B-Chemical ...). JNLPBA mimics the mirror: train has
untyped B/I tags and `-DOCSTART- <id>` lines, devel/test typed tags and `-DOCSTART-<TAB>O` lines.
Species-800 mimics BioBERT's archive: untyped tags, the files under `datasets/NER/s800/`.
"""

from __future__ import annotations

import random
from pathlib import Path

from blurbflow.data.generate.vocab import (
    CHEM_STEMS,
    ENTITY_MAKERS,
    capitalize_first,
    source_rng,
    synthetic_pmids,
)

SPLIT_SIZES = {"train": 1000, "devel": 250, "test": 250}  # sentences
MIN_TOKENS, MAX_TOKENS = 10, 25

CHEM_DISEASE = (
    "{chem} - induced {dis} was observed in {n} patients .",
    "Treatment with {chem} reduced the severity of {dis} .",
    "Patients with {dis} received {chem} for {n} weeks .",
    "The incidence of {dis} was higher after exposure to {chem} .",
    "{chem} did not prevent {dis} in rats .",
    "We report a case of {dis} associated with {chem} therapy .",
    "{chem} and {chem} were compared in patients with {dis} .",
    "No cases of {dis} were reported during follow - up .",
    "Plasma levels of {chem} increased significantly after the infusion .",
    "These results suggest that {chem} protects against {dis} .",
)
GENE_DISEASE = (
    "Mutations in the {gene} gene cause {dis} .",
    "{gene} expression was reduced in {dis} tissue .",
    "We identified a novel {gene} variant in a family with {dis} .",
    "{dis} is caused by deficiency of {gene} .",
    "Loss of {gene} function leads to {dis} in mice .",
    "The {gene} protein binds to {gene} in vitro .",
    "Patients with {dis} showed elevated {gene} levels .",
    "Phosphorylation of {gene} was not affected by the treatment .",
)
GENIA = (
    "{protein} activates the {dna} in {cell_type} .",
    "Expression of {rna} was detected in {cell_line} .",
    "{protein} binds to the {dna} .",
    "Stimulation of {cell_type} with {protein} induced {rna} .",
    "{cell_line} express high levels of {protein} .",
    "The {dna} contains binding sites for {protein} and {protein} .",
    "{protein} is required for the differentiation of {cell_type} .",
)
CHEMICALS = (
    "{chemical} was synthesized from {chemical} in {n} steps .",
    "The oxidation of {chemical} yields {chemical} and water .",
    "Inhibition by {chemical} was measured at {n} micromolar .",
    "A new method for the detection of {chemical} in serum is described .",
    "Crystals of {chemical} were obtained from ethanol .",
    "The binding affinity of {chemical} was {n} times higher than that of {chemical} .",
    "No degradation of the compound was observed after {n} days .",
)
SPECIES = (
    "{species} was isolated from soil samples in {n} sites .",
    "Infection of {species} with {species} reduced survival .",
    "The genome of {species} encodes {n} putative proteins .",
    "Strains of {species} were grown at {n} degrees .",
    "{species} and {species} share a common ancestor .",
    "We sequenced {n} isolates collected from the field .",
    "Larvae of {species} feed on the leaves of {species} .",
)
GENERA = ("Bacill", "Strept", "Lact", "Pseud", "Myc", "Dros", "Arabid", "Sacchar", "Plasm")
GENUS_ENDS = ("us", "ia", "omyces", "ella", "odium", "ophila")
EPITHETS = ("vulgaris", "aureus", "elegans", "fulvidens", "thaliana", "major", "rubra", "coli")
COMMON_NAMES = ("mice", "rats", "zebrafish", "humans", "cattle", "wheat", "maize")


def species(rng: random.Random) -> list[str]:
    """A made-up binomial (Strept-ella rubra), abbreviated or a common name now and then."""
    genus = rng.choice(GENERA) + rng.choice(GENUS_ENDS)
    roll = rng.random()
    if roll < 0.15:
        return [rng.choice(COMMON_NAMES)]
    if roll < 0.3:
        return [f"{genus[0]}.", rng.choice(EPITHETS)]
    return [genus, rng.choice(EPITHETS)]


def chemical(rng: random.Random) -> list[str]:
    """BC4CHEMD's chemicals: the shared maker's names, now and then a formula-like name."""
    if rng.random() < 0.15:
        return [f"{rng.choice(CHEM_STEMS)[:2].upper()}{rng.randint(2, 9)}"]
    return ENTITY_MAKERS["chem"](rng)


MAKERS = {**ENTITY_MAKERS, "species": species, "chemical": chemical}
PREFIXES = ("In this study ,", "Moreover ,", "In contrast ,", "Taken together ,", "Notably ,")
SUFFIXES = (
    "in a cohort of {n} subjects",
    "in vitro",
    "in two independent series",
    "as previously described",
)

# source -> (templates, {slot kind: entity type written in the tags}, text family)
# The two BC5CDR sources share their text (as the real files do) and differ only in tags.
SOURCES = {
    "bc5chem": (CHEM_DISEASE, {"chem": "Chemical"}, "bc5cdr"),
    "bc5disease": (CHEM_DISEASE, {"dis": "Disease"}, "bc5cdr"),
    "ncbidisease": (GENE_DISEASE, {"dis": "Disease"}, "ncbidisease"),
    "bc2gm": (GENE_DISEASE, {"gene": "GENE"}, "bc2gm"),
    "jnlpba": (
        GENIA,
        {
            "protein": "protein",
            "dna": "DNA",
            "rna": "RNA",
            "cell_type": "cell_type",
            "cell_line": "cell_line",
        },
        "jnlpba",
    ),
    "linnaeus": (SPECIES, {"species": "Species"}, "linnaeus"),
    "bc4chemd": (CHEMICALS, {"chemical": "Chemical"}, "bc4chemd"),
    "species800": (SPECIES, {"species": "Species"}, "species800"),
}
# Sources laid out as in an archive: the folder their files lie in (see blurbflow.tasks.biolm)
FOLDERS = {"species800": "datasets/NER/s800"}
UNTYPED = {"species800"}  # BioBERT's preprocessed files carry bare B/I tags


def fill_template(template: str, rng: random.Random) -> list[tuple[str, str | None, bool]]:
    """Template tokens as (token, slot kind or None, starts a mention)."""
    out: list[tuple[str, str | None, bool]] = []
    for word in template.split():
        if word == "{n}":
            out.append((str(rng.randint(3, 400)), None, False))
        elif word.startswith("{") and word.endswith("}"):
            kind = word[1:-1]
            for i, token in enumerate(MAKERS[kind](rng)):
                out.append((token, kind, i == 0))
        else:
            out.append((word, None, False))
    return out


def _sentence(templates, rng: random.Random) -> list[tuple[str, str | None, bool]]:
    while True:
        body = fill_template(rng.choice(templates), rng)
        if rng.random() < 0.4:
            token, kind, begins = body[0]
            if kind is None:  # "Moreover , the ..." rather than "Moreover , The ..."
                body[0] = (token.lower(), kind, begins)
            body = fill_template(rng.choice(PREFIXES), rng) + body
        if len(body) < MIN_TOKENS or rng.random() < 0.3:
            body = body[:-1] + fill_template(rng.choice(SUFFIXES), rng) + body[-1:]
        if MIN_TOKENS <= len(body) <= MAX_TOKENS:
            token, kind, begins = body[0]
            body[0] = (capitalize_first(token), kind, begins)
            return body


def _tag(kind: str | None, begins: bool, types: dict[str, str], typed: bool) -> str:
    if kind not in types:
        return "O"
    prefix = "B" if begins else "I"
    return f"{prefix}-{types[kind]}" if typed else prefix


def generate(source: str, out_dir: Path, seed: int) -> None:
    templates, types, family = SOURCES[source]
    rng = source_rng(family, seed)
    doc_ids = iter(synthetic_pmids(f"{family}-doc", 10_000))
    out_dir = out_dir / FOLDERS.get(source, "")
    out_dir.mkdir(parents=True, exist_ok=True)
    for split, size in SPLIT_SIZES.items():
        jnlpba_train = source == "jnlpba" and split == "train"
        typed = not jnlpba_train and source not in UNTYPED
        lines: list[str] = []
        for index in range(size):
            if source == "jnlpba" and index % 8 == 0:  # a document every 8 sentences
                lines += [f"-DOCSTART- {next(doc_ids)}" if jnlpba_train else "-DOCSTART-\tO", ""]
            for token, kind, begins in _sentence(templates, rng):
                lines.append(f"{token}\t{_tag(kind, begins, types, typed)}")
            lines.append("")
        (out_dir / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
