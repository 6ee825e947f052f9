"""Extractive question answering (SQuAD v1.1/v2.0 format, task type `span`): one entry each.

Splits (docs/data.md): SQuAD publishes no test set, so the official dev file is the test split
and dev is the train articles whose title hashes into the last 5% (`dev_share`): no article is
in two splits, and the split depends on neither file order nor the Python hash seed. BioASQ 7b
factoid (BioBERT's and BioM-Transformers' setting) comes from the same two manual zips as
BioASQ yes/no; test is the golden batches 7B1..7B5, dev the 10% of training questions whose id
hashes there. SQuAD's files change only with a new version, but no digest could be pinned
where these entries were written: the fetch records it (as for EBM-NLP and BioASQ).

Options (`TaskSpec.options`, defaults in `blurbflow.qa.settings`): `version` ("1.1": always
answer; "2.0": "" when the null score wins), `doc_stride`, `max_question_length` (change the
windows), `max_answer_length`, `n_best`, `null_threshold` (change decoding only).
"""

from __future__ import annotations

from blurbflow.tasks.spec import Source, TaskSpec

SQUAD_URL = "https://rajpurkar.github.io/SQuAD-explorer/dataset"
BIOASQ_MANUAL = (
    "BioASQ 7b needs a free registration at http://participants-area.bioasq.org/datasets/ : "
    "download BioASQ-training7b.zip and Task7BGoldenEnriched.zip (the factoid task reads the "
    "same two zips as the yes/no task)"
)


def _squad(name: str, version: str, size: int) -> TaskSpec:
    return TaskSpec(
        name=name,
        type="span",
        max_length=384,  # BERT's SQuAD setting (windows of 384 tokens, doc_stride 128)
        parser="squad",
        size=size,
        seeds=1,  # a large set: seed-to-seed spread is small
        options={"version": version},
        raw=(
            Source(
                name=f"squad-v{version}",
                urls=tuple(f"{SQUAD_URL}/{split}-v{version}.json" for split in ("train", "dev")),
            ),
        ),
    )


ENTRIES: list[TaskSpec] = [
    _squad("squad", "1.1", 83_000),  # 87,599 train questions less the 5% held out as dev
    _squad("squad2", "2.0", 124_000),  # 130,319 less 5%
    TaskSpec(
        name="bioasq-factoid",
        type="span",
        metric="factoid_mrr",  # BioASQ's official factoid measure; strict/lenient also reported
        max_length=384,
        parser="bioasq-factoid",
        size=4_000,  # answer-bearing snippets of the 7b training factoid questions (about)
        seeds=5,
        options={"version": "1.1"},  # always answer: a question is ranked over its snippets
        raw=(
            Source(
                name="bioasq-factoid",
                manual=BIOASQ_MANUAL,
                manual_files=("BioASQ-training7b.zip", "Task7BGoldenEnriched.zip"),
            ),
        ),
    ),
]
