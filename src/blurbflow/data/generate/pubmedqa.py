"""Synthetic PubMedQA PQA-L: `ori_pqal.json` (1000 PMIDs with QUESTION, CONTEXTS, ...,
final_decision) and `test_ground_truth.json` (500 test PMIDs -> decision). The 1000 include
BLURB's 50 fold-0 dev PMIDs (embedded split file). The decision follows cue words in the contexts.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from blurbflow.data.generate.vocab import (
    CANCERS,
    capitalize_first,
    mentions,
    source_rng,
    synthetic_pmids,
)
from blurbflow.data.parsers.common import pubmedqa_fold0_dev_pmids

TEST, TRAIN = 500, 450  # plus the 50 embedded dev PMIDs
LABEL_WEIGHTS = {"yes": 55, "no": 34, "maybe": 11}
LABEL_NOISE = 0.05

QUESTIONS = (
    "Does {chem} improve outcomes in patients with {dis}?",
    "Is {gene} expression associated with prognosis in {dis}?",
    "Can {chem} prevent {dis} after surgery?",
    "Is {dis} more frequent in carriers of {gene} variants?",
)
BACKGROUND = (
    "{dis} remains a frequent cause of morbidity in adults and its management is debated.",
    "The role of {gene} in {dis} has been studied in several small cohorts.",
    "Previous reports on {chem} in {cancer} cancer gave heterogeneous findings.",
)
METHODS = (
    "We enrolled {n} patients in a prospective trial and followed them for {m} months.",
    "A retrospective review of {n} medical records from two centres was performed.",
)
RESULTS = {
    "yes": (
        "{chem} significantly improved survival compared with placebo (p < 0.01).",
        "{gene} expression was strongly associated with poor outcome in all subgroups.",
        "Patients receiving {chem} showed a clear and significant reduction of {dis}.",
    ),
    "no": (
        "No significant difference was observed between the {chem} and control groups.",
        "{gene} expression did not differ between patients with and without {dis}.",
        "{chem} failed to reduce the rate of {dis} in any subgroup.",
    ),
    "maybe": (
        "Results were inconclusive and a possible benefit of {chem} remains uncertain.",
        "A weak trend towards lower {dis} rates did not reach significance in small groups.",
        "Mixed effects of {gene} were seen and further studies are needed to clarify them.",
    ),
}
CONCLUSIONS = {
    "yes": "{chem} appears beneficial.",
    "no": "{chem} offers no benefit.",
    "maybe": "The evidence remains unclear.",
}


def _entry(rng: random.Random, label: str) -> dict:
    fill = {
        **mentions(rng, "chem", "dis", "gene"),
        "cancer": rng.choice(CANCERS),
        "n": rng.randint(20, 900),
        "m": rng.randint(6, 60),
    }
    shown = label if rng.random() >= LABEL_NOISE else rng.choice(list(LABEL_WEIGHTS))
    contexts = [rng.choice(BACKGROUND), rng.choice(RESULTS[shown])]
    if rng.random() < 0.5:
        contexts.insert(1, rng.choice(METHODS))
    sections = (
        ["BACKGROUND", "METHODS", "RESULTS"] if len(contexts) == 3 else ["BACKGROUND", "RESULTS"]
    )
    return {
        "QUESTION": capitalize_first(rng.choice(QUESTIONS).format(**fill)),
        "CONTEXTS": [capitalize_first(c.format(**fill)) for c in contexts],
        "LABELS": sections,
        "MESHES": sorted({"Humans", "Prognosis", fill["dis"].capitalize(), "Treatment Outcome"}),
        "YEAR": str(rng.randint(1995, 2017)),
        "reasoning_required_pred": label,
        "reasoning_free_pred": label,
        "final_decision": label,
        "LONG_ANSWER": capitalize_first(CONCLUSIONS[label].format(**fill)),
    }


def generate(out_dir: Path, seed: int) -> None:
    rng = source_rng("pubmedqa", seed)
    dev = pubmedqa_fold0_dev_pmids()
    others = synthetic_pmids("pubmedqa", TEST + TRAIN, exclude=frozenset(dev))
    test = others[:TEST]
    order = dev + others
    random.Random("pubmedqa-order").shuffle(order)  # mixed like the real file; seed-independent
    labels = list(LABEL_WEIGHTS)
    weights = list(LABEL_WEIGHTS.values())
    data = {pmid: _entry(rng, rng.choices(labels, weights=weights)[0]) for pmid in order}
    (out_dir / "ori_pqal.json").write_text(json.dumps(data, indent=4) + "\n", encoding="utf-8")
    truth = {pmid: data[pmid]["final_decision"] for pmid in test}
    (out_dir / "test_ground_truth.json").write_text(
        json.dumps(truth, indent=4) + "\n", encoding="utf-8"
    )
