"""Synthetic BIOSSES `annotation_pairs_scores.tsv`: 100 sentence pairs (ids 1..100, so BLUE's
embedded 64/16/20 split applies) scored 0-4 by 5 noisy annotators. The true similarity is the
share of words the second sentence keeps from the first.
"""

from __future__ import annotations

import random
from pathlib import Path

from blurbflow.data.generate.ner import CHEM_DISEASE, GENE_DISEASE, fill_template
from blurbflow.data.generate.vocab import (
    FILLER_NOUNS,
    capitalize_first,
    detokenize,
    source_rng,
)

PAIRS = 100
ANNOTATORS = ("a", "b", "c", "d", "e")
REPLACEMENTS = FILLER_NOUNS + (
    "signaling",
    "pathway",
    "mutation",
    "tumor",
    "cells",
    "growth",
    "inhibition",
    "apoptosis",
    "recently",
    "strongly",
    "reduced",
)


def _tokens(rng: random.Random) -> list[str]:
    tokens = [token for token, _, _ in fill_template(rng.choice(CHEM_DISEASE + GENE_DISEASE), rng)]
    return [capitalize_first(tokens[0]), *tokens[1:]]


def _pair(rng: random.Random) -> tuple[str, str, float]:
    first = _tokens(rng) + _tokens(rng)[:-1] + ["."]  # two clauses: ~15-20 words
    keep = rng.random()
    if keep < 0.25:  # unrelated pair that shares only a word or two
        second = _tokens(rng) + [rng.choice(first)] + _tokens(rng)[:-1] + ["."]
    else:
        second = [t if t == "." or rng.random() < keep else rng.choice(REPLACEMENTS) for t in first]
    shared = len(set(first) & set(second)) / len(set(first) | set(second))
    return detokenize(first), detokenize(second), shared


def generate(out_dir: Path, seed: int) -> None:
    rng = source_rng("biosses", seed)
    header = "sentence_id\tsentence_1\tsentence_2\t" + "\t".join(
        f"annotator_{a}" for a in ANNOTATORS
    )
    lines = [header]
    for pair_id in range(1, PAIRS + 1):
        first, second, shared = _pair(rng)
        scores = [min(4, max(0, round(4 * shared + rng.gauss(0, 0.6)))) for _ in ANNOTATORS]
        lines.append("\t".join([str(pair_id), first, second, *map(str, scores)]))
    (out_dir / "annotation_pairs_scores.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
