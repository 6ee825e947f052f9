"""Synthetic EBM-NLP 2.00: `ebm_nlp_2_00/documents/{PMID}.text` (the abstract) and
`{PMID}.tokens` (one token a line), and per PICO element one `{PMID}.AGGREGATED.ann` (one 0/1 a
line per token) under `annotations/aggregated/starting_spans/{participants,interventions,
outcomes}/{train,test/gold}/`. BLURB's train and dev documents are annotated in `train`, its test
documents in `test/gold`.

Spans follow cue words (patients with ..., randomised to ..., reduced ...), and some spans
overlap (a drug inside a participant or outcome description), so the Outcome > Intervention >
Participant precedence matters. Sentences end with a "." token, except sometimes the last one.
PMIDs are seed-independent, so the BLURB index lists name the same documents whatever the seed.
"""

from __future__ import annotations

import random
from pathlib import Path

from blurbflow.data.generate.vocab import (
    capitalize_first,
    chemical,
    detokenize,
    disease,
    source_rng,
    split_in_order,
    synthetic_pmids,
)

ROOT = "ebm_nlp_2_00"
ANN_DIR = "annotations/aggregated/starting_spans"
ELEMENTS = {"P": "participants", "I": "interventions", "O": "outcomes"}
SPLIT_SIZES = {"train": 300, "dev": 60, "test": 40}  # documents in BLURB's lists
ANN_FOLDER = {"train": "train", "dev": "train", "test": "test/gold"}

OUTCOMES = (
    "pain scores",
    "quality of life",
    "mortality",
    "blood pressure",
    "relapse rate",
    "length of hospital stay",
    "HbA1c levels",
    "symptom severity",
    "exacerbations",
)
THERAPIES = (
    "cognitive behavioural therapy",
    "acupuncture",
    "physiotherapy",
    "exercise training",
    "a telephone follow-up programme",
    "nurse-led education",
)
# Markup: <X opens and X> closes a span of element X (P, I, O); spans may nest (overlap).
# {dis}, {drug}, {therapy}, {outcome}, {n}, {n2} are filled in.
OPENING = (
    "<P A total of {n} patients with {dis} P> were randomised to <I {drug} I> or <I placebo I> .",
    "<P Children aged {age} to {age2} years with {dis} P> were enrolled in this trial .",
    "We compared <I {therapy} I> with <I usual care I> in <P {n} adults with {dis} P> .",
    "<P {n} <I {drug} I> -treated outpatients with {dis} P> were followed for {n2} weeks .",
)
BODY = (
    "The primary outcome was <O {outcome} O> at {n} weeks .",
    "We assessed <O {outcome} O> and <O {outcome} O> after treatment .",
    "<I {drug} I> significantly reduced <O {outcome} O> compared with <I placebo I> .",
    "<O <I {drug} I> -related adverse events O> were rare and mild .",
    "<I {therapy} I> improved <O {outcome} O> in <P women with {dis} P> .",
    "The difference was significant ( p = {pval} ) .",
    "Data were analysed by intention to treat .",
    "The trial was registered before recruitment began .",
)
CLOSING = (
    "<I {drug} I> is an effective option for <P patients with {dis} P> .",
    "Further trials should measure <O {outcome} O> over longer periods .",
    "Conclusions : <I {therapy} I> may reduce <O {outcome} O>",  # no final "."
)


def ebmnlp_split_pmids() -> dict[str, list[str]]:
    """BLURB's split lists: PMIDs per split, train then dev then test (seed-independent)."""
    return split_in_order(synthetic_pmids("ebmnlp", sum(SPLIT_SIZES.values())), SPLIT_SIZES)


def _fill(rng: random.Random, template: str) -> list[str]:
    values = {
        "dis": " ".join(disease(rng)),
        "drug": " ".join(chemical(rng)),
        "therapy": rng.choice(THERAPIES),
        "n": str(rng.randint(12, 480)),
        "n2": str(rng.randint(4, 52)),
        "pval": f"0.0{rng.randint(1, 4)}",
        "age": str(rng.randint(2, 8)),
        "age2": str(rng.randint(9, 17)),
    }
    words = []
    for word in template.split():
        if word.startswith("{") and word.endswith("}"):
            key = word[1:-1]
            value = rng.choice(OUTCOMES) if key == "outcome" else values[key]
            words.extend(value.split())
        else:
            words.append(word)
    return words


def _sentence(rng: random.Random, template: str) -> tuple[list[str], dict[str, list[int]]]:
    """Tokens and per-element 0/1 flags of one filled template."""
    tokens: list[str] = []
    flags: dict[str, list[int]] = {e: [] for e in ELEMENTS}
    open_spans: set[str] = set()
    for word in _fill(rng, template):
        if len(word) == 2 and word[0] == "<" and word[1] in ELEMENTS:
            open_spans.add(word[1])
        elif len(word) == 2 and word[1] == ">" and word[0] in ELEMENTS:
            open_spans.discard(word[0])
        else:
            tokens.append(word)
            for element in ELEMENTS:
                flags[element].append(int(element in open_spans))
    tokens[0] = capitalize_first(tokens[0])
    return tokens, flags


def _document(rng: random.Random) -> tuple[list[str], dict[str, list[int]]]:
    templates = [rng.choice(OPENING), *rng.sample(BODY, rng.randint(2, 5)), rng.choice(CLOSING)]
    tokens: list[str] = []
    flags: dict[str, list[int]] = {e: [] for e in ELEMENTS}
    for template in templates:
        words, marks = _sentence(rng, template)
        tokens += words
        for element in ELEMENTS:
            flags[element] += marks[element]
    return tokens, flags


def generate(out_dir: Path, seed: int) -> None:
    rng = source_rng("ebmnlp", seed)
    base = out_dir / ROOT
    (base / "documents").mkdir(parents=True, exist_ok=True)
    for split, pmids in ebmnlp_split_pmids().items():
        folders = {e: base / ANN_DIR / name / ANN_FOLDER[split] for e, name in ELEMENTS.items()}
        for folder in folders.values():
            folder.mkdir(parents=True, exist_ok=True)
        for pmid in pmids:
            tokens, flags = _document(rng)
            (base / "documents" / f"{pmid}.text").write_text(
                detokenize(tokens) + "\n", encoding="utf-8"
            )
            (base / "documents" / f"{pmid}.tokens").write_text(
                "\n".join(tokens) + "\n", encoding="utf-8"
            )
            for element, folder in folders.items():
                (folder / f"{pmid}.AGGREGATED.ann").write_text(
                    "\n".join(map(str, flags[element])) + "\n", encoding="utf-8"
                )
