"""Synthetic BioASQ 7b, laid out as the two manual zips extract: `BioASQ-training7b/
trainining7b.json` (sic) and `Task7BGoldenEnriched/7B{1..5}_golden.json`, each
`{"questions": [...]}` with the real fields (body, type, id, snippets, exact_answer, ...).

The yes/no questions are BLURB's 670 train + 75 dev (training file) and 140 test (golden files);
factoid, list and summary questions are mixed in and must be dropped. The answer follows cue
words in the snippets (increased / was associated with vs. did not / no association), and
exact_answer mixes "yes" and "Yes" as real files do. Question ids are seed-independent, so the
BLURB index lists name the same questions whatever the seed.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from blurbflow.data.generate.vocab import (
    capitalize_first,
    chemical,
    detokenize,
    mentions,
    source_rng,
    synthetic_pmids,
)

TRAIN_FILE = "BioASQ-training7b/trainining7b.json"  # sic
TEST_DIR = "Task7BGoldenEnriched"
SPLIT_SIZES = {"train": 670, "dev": 75, "test": 140}  # yes/no questions in BLURB's lists
BATCHES = 5  # golden files 7B1 .. 7B5
OTHER_TRAIN, OTHER_PER_BATCH = 150, 12  # non-yes/no questions mixed in
YES_SHARE, LABEL_NOISE = 0.6, 0.05

QUESTIONS = (
    "Is {gene} involved in {dis}?",
    "Does {chem} reduce the risk of {dis}?",
    "Is {chem} metabolised by {gene}?",
    "Are mutations in {gene} associated with {dis}?",
)
EVIDENCE = {
    "yes": (
        "{gene} expression was significantly increased in patients with {dis}.",
        "Treatment with {chem} was associated with a marked reduction of {dis}.",
        "These results confirm that {gene} plays a key role in {dis}.",
    ),
    "no": (
        "{gene} expression did not differ between patients with {dis} and controls.",
        "No association between {chem} and {dis} was found in this cohort.",
        "{chem} failed to show any effect on {dis}.",
    ),
}
BACKGROUND = (
    "{dis} is a common disorder with a complex aetiology.",
    "{chem} is widely used in clinical practice.",
    "The function of {gene} has been studied in several model organisms.",
)
OTHER = {
    "factoid": "Which gene is mutated in {dis}?",
    "list": "List drugs used for the treatment of {dis}.",
    "summary": "What is the role of {gene} in {dis}?",
}


def _ids(kind: str, count: int) -> list[str]:
    """24-hex-digit ids like BioASQ's, independent of any seed."""
    return [hashlib.sha256(f"bioasq:{kind}:{i}".encode()).hexdigest()[:24] for i in range(count)]


def bioasq_split_ids() -> dict[str, list[str]]:
    """BLURB's split lists: the yes/no question ids per split (seed-independent)."""
    train_pool = _ids("train-yesno", SPLIT_SIZES["train"] + SPLIT_SIZES["dev"])
    return {
        "train": train_pool[: SPLIT_SIZES["train"]],
        "dev": train_pool[SPLIT_SIZES["train"] :],
        "test": _ids("test-yesno", SPLIT_SIZES["test"]),
    }


def _fill(rng: random.Random) -> dict[str, str]:
    return mentions(rng, "gene", "chem", "dis")


def _snippets(rng: random.Random, texts: list[str], pmids: list[str]) -> list[dict]:
    out = []
    for text, pmid in zip(texts, pmids, strict=True):
        begin = rng.randint(0, 400)
        out.append(
            {
                "offsetInBeginSection": begin,
                "offsetInEndSection": begin + len(text),
                "text": text,
                "beginSection": "abstract",
                "document": f"http://www.ncbi.nlm.nih.gov/pubmed/{pmid}",
                "endSection": "abstract",
            }
        )
    return out


def _yesno(rng: random.Random, qid: str, pmids: list[str]) -> dict:
    label = "yes" if rng.random() < YES_SHARE else "no"
    shown = label if rng.random() >= LABEL_NOISE else ("no" if label == "yes" else "yes")
    fill = _fill(rng)
    evidence = [
        capitalize_first(t.format(**fill)) for t in rng.sample(EVIDENCE[shown], rng.randint(1, 2))
    ]
    texts = list(evidence)
    if rng.random() < 0.6:
        background = capitalize_first(rng.choice(BACKGROUND).format(**fill))
        texts.insert(rng.randint(0, len(texts)), background)
    docs = rng.sample(pmids, len(texts))
    answer = label.capitalize() if rng.random() < 0.2 else label
    return {
        "body": capitalize_first(rng.choice(QUESTIONS).format(**fill)),
        "documents": sorted({f"http://www.ncbi.nlm.nih.gov/pubmed/{p}" for p in docs}),
        "ideal_answer": [f"{label.capitalize()}. {evidence[0]}"],
        "exact_answer": answer,
        "concepts": [],
        "type": "yesno",
        "id": qid,
        "snippets": _snippets(rng, texts, docs),
    }


def _other(rng: random.Random, qid: str, pmids: list[str]) -> dict:
    kind = rng.choice(list(OTHER))
    fill = _fill(rng)
    docs = rng.sample(pmids, 2)
    entry = {
        "body": OTHER[kind].format(**fill),
        "documents": [f"http://www.ncbi.nlm.nih.gov/pubmed/{p}" for p in docs],
        "ideal_answer": [capitalize_first(rng.choice(BACKGROUND).format(**fill))],
        "concepts": [],
        "type": kind,
        "id": qid,
        "snippets": _snippets(
            rng, [capitalize_first(t.format(**fill)) for t in rng.sample(BACKGROUND, 2)], docs
        ),
    }
    if kind == "factoid":
        entry["exact_answer"] = [[fill["gene"]]]
    elif kind == "list":
        entry["exact_answer"] = [[fill["chem"]], [detokenize(chemical(rng))]]
    return entry


def write_questions(path: Path, questions: list[dict]) -> None:
    """A BioASQ question file: `{"questions": [...]}`, indented as the real ones."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"questions": questions}, indent=2) + "\n", encoding="utf-8")


def generate(out_dir: Path, seed: int) -> None:
    rng = source_rng("bioasq", seed)
    pmids = synthetic_pmids("bioasq-docs", 400)
    ids = bioasq_split_ids()
    train = [_yesno(rng, qid, pmids) for qid in ids["train"] + ids["dev"]]
    train += [_other(rng, qid, pmids) for qid in _ids("train-other", OTHER_TRAIN)]
    rng.shuffle(train)
    write_questions(out_dir / TRAIN_FILE, train)
    others = _ids("test-other", BATCHES * OTHER_PER_BATCH)
    per_batch = -(-SPLIT_SIZES["test"] // BATCHES)
    for batch in range(BATCHES):
        questions = [
            _yesno(rng, qid, pmids)
            for qid in ids["test"][batch * per_batch : (batch + 1) * per_batch]
        ]
        questions += [
            _other(rng, qid, pmids)
            for qid in others[batch * OTHER_PER_BATCH : (batch + 1) * OTHER_PER_BATCH]
        ]
        rng.shuffle(questions)
        write_questions(out_dir / TEST_DIR / f"7B{batch + 1}_golden.json", questions)
