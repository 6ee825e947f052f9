"""Synthetic SQuAD v1.1 / v2.0: `train-v{version}.json` and `dev-v{version}.json` in the real
format (`{"version", "data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]}`).

Each paragraph states a few facts in fixed sentence patterns (a chemical inhibits a gene, a
gene is expressed in cells, ...) among background sentences; a question names one fact's
subject and asks for its object, which is the answer span. A tiny model learns to find the
sentence sharing the question's words and take the span at the pattern's slot. Every tenth
paragraph is long (140-190 BERT word pieces, the others 30-70), so that with short windows a
context spans several. In v2.0
about a quarter of the questions ask about a fact the paragraph does not state
(`is_impossible`, with `plausible_answers` as the real files have). Deterministic in `seed`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from blurbflow.data.generate.vocab import (
    capitalize_first,
    cell_type,
    chemical,
    detokenize,
    disease,
    gene,
    source_rng,
)

SIZES = {"train": 150, "dev": 40}  # paragraphs per file
PARAGRAPHS_PER_ARTICLE = 2
IMPOSSIBLE_PER_PARAGRAPH = 2 / 3  # v2.0: 2 answerable + this -> a quarter unanswerable

# relation -> (sentence with its answer slot {ans}, question; both name the subject {subj})
FACTS = {
    "inhibits": ("{subj} inhibits {ans} in vitro.", "What does {subj} inhibit?"),
    "treats": ("{subj} is used to treat {ans}.", "Which disease is {subj} used to treat?"),
    "expressed": ("{subj} is highly expressed in {ans}.", "Where is {subj} highly expressed?"),
    "causes": ("Mutations in {ans} cause {subj}.", "Mutations in which gene cause {subj}?"),
    "binds": ("{ans} binds {subj} to form a stable complex.", "Which protein binds {subj}?"),
}
# (subject maker, answer maker) per relation
MAKERS = {
    "inhibits": (chemical, gene),
    "treats": (chemical, disease),
    "expressed": (gene, cell_type),
    "causes": (disease, gene),
    "binds": (gene, gene),
}
BACKGROUND = (
    "The study enrolled patients from three centres.",
    "Samples were collected before and after treatment.",
    "Statistical analysis used a two-sided test.",
    "These findings were replicated in an independent cohort.",
    "Further work is needed to confirm the mechanism.",
    "Expression was measured by quantitative PCR.",
)


def _fact(rng: random.Random, relation: str) -> tuple[str, str, int, str]:
    """(sentence, answer, answer offset in the sentence, question)."""
    subject_maker, answer_maker = MAKERS[relation]
    subject, answer = detokenize(subject_maker(rng)), detokenize(answer_maker(rng))
    sentence_pattern, question_pattern = FACTS[relation]
    before, after = sentence_pattern.split("{ans}")
    before = capitalize_first(before.format(subj=subject)) if before else ""
    after = after.format(subj=subject)
    sentence = before + (answer if before else capitalize_first(answer)) + after
    return (
        sentence,
        sentence[len(before) : len(before) + len(answer)],
        len(before),
        (question_pattern.format(subj=subject)),
    )


def _paragraph(rng: random.Random, version: str, long: bool, ids: list[int]) -> dict:
    relations = rng.sample(list(FACTS), 3)
    facts = [_fact(rng, r) for r in relations]
    sentences: list[tuple[str, int | None]] = [(f[0], i) for i, f in enumerate(facts)]
    for _ in range(rng.randint(12, 16) if long else rng.randint(0, 3)):
        sentences.append((rng.choice(BACKGROUND), None))
    rng.shuffle(sentences)
    context, starts = "", {}
    for sentence, fact in sentences:
        context += " " if context else ""
        if fact is not None:
            starts[fact] = len(context) + facts[fact][2]
        context += sentence
    qas = []
    for index in rng.sample(range(3), 2):
        _, answer, _, question = facts[index]
        qas.append(
            {
                "question": question,
                "id": f"{ids[0]:024x}",
                "answers": [{"text": answer, "answer_start": starts[index]}],
            }
        )
        ids[0] += 1
        if version == "2.0":
            qas[-1]["is_impossible"] = False
    if version == "2.0" and rng.random() < IMPOSSIBLE_PER_PARAGRAPH:
        missing = rng.choice([r for r in FACTS if r not in relations])
        _, plausible, _, question = _fact(rng, missing)
        qas.append(
            {
                "question": question,
                "id": f"{ids[0]:024x}",
                "answers": [],
                "plausible_answers": [{"text": facts[0][1], "answer_start": starts[0]}],
                "is_impossible": True,
            }
        )
        ids[0] += 1
    return {"context": context, "qas": qas}


def write_file(path: Path, rng: random.Random, version: str, paragraphs: int, ids: list[int]):
    articles = []
    for a in range(-(-paragraphs // PARAGRAPHS_PER_ARTICLE)):
        count = min(PARAGRAPHS_PER_ARTICLE, paragraphs - a * PARAGRAPHS_PER_ARTICLE)
        title = f"{path.stem.split('-')[0].capitalize()}_article_{a:04d}"
        articles.append(
            {
                "title": title,
                "paragraphs": [
                    _paragraph(
                        rng, version, long=(a * PARAGRAPHS_PER_ARTICLE + p) % 10 == 9, ids=ids
                    )
                    for p in range(count)
                ],
            }
        )
    path.write_text(
        json.dumps({"version": version, "data": articles}, indent=1) + "\n", encoding="utf-8"
    )


def generate(out_dir: Path, seed: int, version: str = "2.0") -> None:
    if version not in ("1.1", "2.0"):
        raise ValueError(f"SQuAD version {version!r}: use '1.1' or '2.0'")
    rng = source_rng(f"squad-v{version}", seed)
    ids = [0x5A0000]  # distinct question ids across both files
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    for split, paragraphs in SIZES.items():
        write_file(Path(out_dir) / f"{split}-v{version}.json", rng, version, paragraphs, ids)
