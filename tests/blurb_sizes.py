"""BLURB's split sizes: Gu et al. 2021 Table 3, what `snakemake data` counts on the real files
(tests/test_data_download.py asserts these), and the sets whose counts differ from Table 3 or
are not counted here, which docs/fidelity.md's "Data splits" row must name
(tests/test_data_sizes.py)."""

from __future__ import annotations

import re

# Gu Table 3, train / dev / test: entity mentions (NER), PICO-labelled words (EBM PICO),
# instances (the others)
GU_TABLE3 = {
    "bc5chem": (5203, 5347, 5385),
    "bc5disease": (4182, 4244, 4424),
    "ncbidisease": (5134, 787, 960),
    "bc2gm": (15197, 3061, 6325),
    "jnlpba": (46750, 4551, 8662),
    "ebmpico": (339167, 85321, 16364),
    "chemprot": (18035, 11268, 15745),
    "ddi": (22233, 5559, 5716),
    "gad": (4261, 534, 535),
    "biosses": (64, 16, 20),
    "hoc": (1295, 186, 371),
    "pubmedqa": (450, 50, 500),
    "bioasq": (670, 75, 140),
}
# what the prepared stats.json counts on the mirror's real files
ENTITY_MENTIONS = {
    "bc5chem": (5203, 5347, 5385),
    "bc5disease": (4182, 4246, 4424),
    "ncbidisease": (5134, 787, 960),
    "bc2gm": (15197, 3061, 6325),
    "jnlpba": (46750, 4551, 8662),
}
INSTANCES = {
    "chemprot": (18035, 11268, 15745),
    "ddi": (25296, 2496, 5716),
    "gad": (4261, 535, 534),
    "biosses": (64, 16, 20),
    "hoc": (1295, 186, 371),
    "pubmedqa": (450, 50, 500),
}
# entries of BLURB's released split lists (data_generation/indexing), read by each parser
SPLIT_LISTS = {
    "ebmpico": (3842, 960, 191),  # abstracts (Gu 4.2's text: 4300, 500, 200)
    "bioasq": (670, 75, 140),  # questions: Table 3's counts
    "ddi": (624, 90, 191),  # documents (Gu 4.2)
    "hoc": (1295, 186, 371),  # abstracts: Table 3's counts
}
# sets not counted against Table 3 here: the mirror lacks their source files
UNCOUNTED = {
    "ebmpico": "EBM-NLP is not in the mirror (its split lists are checked)",
    "bioasq": "a registered download, not in the mirror (its split lists are Table 3's)",
}
# how docs/fidelity.md names each set
LABELS = {"bc5disease": "BC5-disease", "ddi": "DDI", "gad": "GAD", "ebmpico": "EBM PICO",
          "bioasq": "BioASQ"}  # fmt: skip
BLURB_SETS = list(GU_TABLE3)


def size_problems(measured: dict, uncounted: dict, row: str) -> list[str]:
    """Each BLURB set must be counted (`measured`, train/dev/test) or `uncounted`; a count that
    differs from Table 3, and an uncounted set, must be named in the fidelity map's "Data splits"
    `row` (with the differing figure, as Table 3 prints it without separators or with them)."""
    problems = []
    for task in BLURB_SETS:
        gu, ours = GU_TABLE3[task], measured.get(task)
        if ours is None and task not in uncounted:
            problems.append(f"{task}: neither counted nor listed as uncounted")
            continue
        label = LABELS.get(task, task)
        if ours is not None and ours != gu or task in uncounted:
            if f"**{label}**" not in row:
                problems.append(f"{task}: the Data splits row does not name **{label}**")
        for split, got, printed in zip(("train", "dev", "test"), ours or gu, gu, strict=True):
            if (
                ours is not None
                and got != printed
                and not re.search(rf"\b{got:,}\b|\b{got}\b", row)
            ):
                problems.append(f"{task} {split}: {got} (Table 3: {printed}) not stated")
    return problems


def data_splits_row(fidelity: str) -> str:
    """The fidelity map's "Data splits" table row."""
    (row,) = re.findall(r"^\| Data splits \|.*$", fidelity, re.M)
    return row
