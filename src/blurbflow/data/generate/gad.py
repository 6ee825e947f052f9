"""Synthetic BioBERT REdata GAD: `GAD/{1..10}/train.tsv` (sentence<TAB>label, no header) and
`GAD/{1..10}/test.tsv` (header `index<TAB>sentence<TAB>label`), a 10-fold cross-validation over
one pool of sentences like the real folds; EU-ADR (`datasets/RE/euadr/{1..10}/…`, as in BioBERT's
datasets.tar.gz) the same, smaller (355 sentences, as the real corpus). The label follows the
cue phrase, with ~7% noise.
"""

from __future__ import annotations

import random
from pathlib import Path

from blurbflow.data.generate.vocab import CANCERS, source_rng

FOLD1_TRAIN, FOLD1_TEST = 4261 + 535, 534  # BLURB: train = first 4261 lines, dev = the rest
FOLDS = 10
EUADR_POOL = 355  # EU-ADR's sentences over its 10 folds
LABEL_NOISE = 0.07

INTROS = (
    "Our results indicate that the",
    "We found that the",
    "These data suggest that the",
    "In this cohort , the",
    "The present study shows that the",
    "Overall , the",
)
VARIANTS = ("C677T", "Arg72Pro", "-308G/A", "Val158Met", "I/D", "A1298C", "Ala54Thr", "Pro12Ala")
POSITIVE = (
    "is associated with",
    "was significantly associated with",
    "confers susceptibility to",
    "increases the risk of",
    "is a risk factor for",
    "contributes to the development of",
)
NEGATIVE = (
    "is not associated with",
    "was not associated with",
    "showed no association with",
    "does not contribute to",
    "is unlikely to influence susceptibility to",
    "had no effect on the risk of",
)
CARRIER_POSITIVE = ("had a higher risk of", "were more susceptible to", "more often developed")
CARRIER_NEGATIVE = (
    "had no increased risk of",
    "were not more susceptible to",
    "did not more often develop",
)
POPULATIONS = (
    "in the Han Chinese population",
    "in Caucasian patients",
    "among Japanese women",
    "in children",
    "in a case - control study of {n} subjects",
    "in {cancer} patients",
)


def _sentence(rng: random.Random) -> tuple[str, str]:
    positive = rng.random() < 0.53
    variant = rng.choice(VARIANTS) if rng.random() < 0.7 else f"rs{rng.randint(1000, 9999999)}"
    where = rng.choice(POPULATIONS).format(n=rng.randint(50, 900), cancer=rng.choice(CANCERS))
    if rng.random() < 0.75:
        cue = rng.choice(POSITIVE if positive else NEGATIVE)
        words = f"{rng.choice(INTROS)} {variant} polymorphism of the @GENE$ gene {cue} @DISEASE$"
    else:
        cue = rng.choice(CARRIER_POSITIVE if positive else CARRIER_NEGATIVE)
        words = f"Carriers of the {variant} allele of @GENE$ {cue} @DISEASE$"
    text = f"{words} {where}.".replace(" ,", ",").replace(" - ", "-")
    label = positive if rng.random() >= LABEL_NOISE else not positive
    return text, "1" if label else "0"


def _fold_bounds(pool: int, first: int = FOLD1_TEST) -> list[tuple[int, int]]:
    """Test slice per fold: fold 1 has exactly `first` lines, the rest share what is left."""
    bounds = [(0, first)]
    rest = pool - first
    start = first
    for fold in range(FOLDS - 1):
        size = rest // (FOLDS - 1) + (1 if fold < rest % (FOLDS - 1) else 0)
        bounds.append((start, start + size))
        start += size
    return bounds


def generate(out_dir: Path, seed: int) -> None:
    rng = source_rng("gad", seed)
    pool = [_sentence(rng) for _ in range(FOLD1_TRAIN + FOLD1_TEST)]
    _write_folds(out_dir / "GAD", pool, FOLD1_TEST)


def generate_euadr(out_dir: Path, seed: int) -> None:
    rng = source_rng("euadr", seed)
    pool = [_sentence(rng) for _ in range(EUADR_POOL)]
    _write_folds(out_dir / "datasets/RE/euadr", pool, EUADR_POOL // FOLDS)


def _write_folds(root: Path, pool: list[tuple[str, str]], first: int) -> None:
    for fold, (start, end) in enumerate(_fold_bounds(len(pool), first), start=1):
        folder = root / str(fold)
        folder.mkdir(parents=True, exist_ok=True)
        train = pool[:start] + pool[end:]
        test = pool[start:end]
        (folder / "train.tsv").write_text(
            "".join(f"{text}\t{label}\n" for text, label in train), encoding="utf-8"
        )
        (folder / "test.tsv").write_text(
            "index\tsentence\tlabel\n"
            + "".join(f"{i}\t{text}\t{label}\n" for i, (text, label) in enumerate(test)),
            encoding="utf-8",
        )
