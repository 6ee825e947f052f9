"""Synthetic BioASQ 7b factoid questions, laid out as the two manual zips extract (as
`bioasq.py` writes them for yes/no): `BioASQ-training7b/trainining7b.json` (sic) and
`Task7BGoldenEnriched/7B{1..5}_golden.json`, each `{"questions": [...]}` with the real fields.

A factoid question asks for one fact of the SQuAD generator's patterns (`squad.FACTS`); its
snippets state that fact (one or two of them, the answer sometimes written as a synonym, e.g.
"X protein" for "X") among snippets about other entities. `exact_answer` lists the synonyms,
as a list of lists (`[["X", "X protein"]]`) or, as older training questions do, a flat list.
Yes/no and summary questions are mixed in and must be dropped. Deterministic in `seed`.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from blurbflow.data.generate.bioasq import TEST_DIR, TRAIN_FILE, write_questions
from blurbflow.data.generate.squad import BACKGROUND, FACTS, MAKERS
from blurbflow.data.generate.vocab import (
    capitalize_first,
    detokenize,
    source_rng,
    synthetic_pmids,
)

SIZES = {"train": 400, "test": 100}  # factoid questions; the test ones over 5 golden batches
BATCHES, OTHERS_PER_FILE = 5, 6


def _qid(kind: str, index: int) -> str:
    return hashlib.sha256(f"bioasq-factoid:{kind}:{index}".encode()).hexdigest()[:24]


def _statement(rng: random.Random, relation: str, subject: str, answer: str) -> str:
    pattern = FACTS[relation][0]
    return capitalize_first(pattern.format(subj=subject, ans=answer))


def _snippet(rng: random.Random, text: str, pmid: str) -> dict:
    begin = rng.randint(0, 400)
    return {
        "offsetInBeginSection": begin,
        "offsetInEndSection": begin + len(text),
        "text": text,
        "beginSection": "abstract",
        "endSection": "abstract",
        "document": f"http://www.ncbi.nlm.nih.gov/pubmed/{pmid}",
    }


def _factoid(rng: random.Random, qid: str, pmids: list[str], nested: bool) -> dict:
    relation = rng.choice(list(FACTS))
    subject_maker, answer_maker = MAKERS[relation]
    subject, answer = detokenize(subject_maker(rng)), detokenize(answer_maker(rng))
    synonyms = [answer, f"{answer} protein"] if answer_maker.__name__ == "gene" else [answer]
    texts = [
        _statement(rng, relation, subject, rng.choice(synonyms)) for _ in range(rng.randint(1, 2))
    ]
    for _ in range(rng.randint(1, 3)):  # distractors: other facts, other entities
        other = rng.choice(list(FACTS))
        texts.append(
            _statement(
                rng, other, detokenize(MAKERS[other][0](rng)), detokenize(MAKERS[other][1](rng))
            )
        )
    if rng.random() < 0.5:
        texts.append(rng.choice(BACKGROUND))
    rng.shuffle(texts)
    docs = rng.sample(pmids, len(texts))
    return {
        "body": FACTS[relation][1].format(subj=subject),
        "type": "factoid",
        "id": qid,
        "documents": sorted({f"http://www.ncbi.nlm.nih.gov/pubmed/{p}" for p in docs}),
        "snippets": [_snippet(rng, t, p) for t, p in zip(texts, docs, strict=True)],
        "exact_answer": [synonyms] if nested else synonyms,
        "ideal_answer": [texts[0]],
        "concepts": [],
    }


def _other(rng: random.Random, qid: str, pmids: list[str]) -> dict:
    kind = rng.choice(("yesno", "summary"))
    text = rng.choice(BACKGROUND)
    entry = {
        "body": "Is this finding replicated?" if kind == "yesno" else "Describe the study.",
        "type": kind,
        "id": qid,
        "documents": [],
        "concepts": [],
        "snippets": [_snippet(rng, text, rng.choice(pmids))],
        "ideal_answer": [text],
    }
    if kind == "yesno":
        entry["exact_answer"] = "yes"
    return entry


def generate(out_dir: Path, seed: int) -> None:
    rng = source_rng("bioasq-factoid", seed)
    pmids = synthetic_pmids("bioasq-factoid-docs", 600)
    out_dir = Path(out_dir)
    train = [
        _factoid(rng, _qid("train", i), pmids, nested=rng.random() < 0.5)
        for i in range(SIZES["train"])
    ]
    train += [_other(rng, _qid("train-other", i), pmids) for i in range(OTHERS_PER_FILE)]
    rng.shuffle(train)
    write_questions(out_dir / TRAIN_FILE, train)
    per_batch = SIZES["test"] // BATCHES
    for batch in range(BATCHES):
        questions = [
            _factoid(rng, _qid("test", batch * per_batch + i), pmids, nested=True)
            for i in range(per_batch)
        ]
        questions += [
            _other(rng, _qid(f"test-other-{batch}", i), pmids) for i in range(OTHERS_PER_FILE)
        ]
        rng.shuffle(questions)
        write_questions(out_dir / TEST_DIR / f"7B{batch + 1}_golden.json", questions)
