"""Bio-LM's public tasks beyond BLURB (Lewis et al. 2020): one entry each.

Lewis et al. add three public NER corpora to BLURB's five: LINNAEUS and BC4CHEMD as Crichton et
al. (2017) distribute them (typed B-/I- tags, collapsed to B/I/O as for BLURB), Species-800 as
BioBERT preprocessed it (Crichton et al. do not ship it). Sizes are training sentences.

Digests: LINNAEUS's are pinned from the shared mirror; BC4CHEMD and Species-800 were not
obtainable where these were pinned (their digests are recorded at fetch time, not verified).
"""

from __future__ import annotations

from blurbflow.tasks.builtin import CRICHTON, crichton, ner_task
from blurbflow.tasks.spec import Source, TaskSpec

# blurbflow.data.fetch.tree_digest of each file of Crichton et al.'s linnaeus-IOB
LINNAEUS_DIGESTS = {
    "train.tsv": "1cfdfab2bc3bf27b0de898b8a7048242cb8e9424bc3a534d1bcb11f764700cbf",
    "devel.tsv": "8ab6a1ac034d47f46f422ed271aeee46d15a8fe9fdc7cd4db449da866affb21d",
    "test.tsv": "691a973b06a5b1f90851698861e66eed904bfbacd97932c45b21395ec3ace844",
}
SPLIT_FILES = ("train.tsv", "devel.tsv", "test.tsv")
# BioBERT's preprocessed sets (Lee et al. 2020): one archive, a folder per corpus
# (`datasets/NER/s800`, `datasets/RE/euadr/{1..10}`), fetched once for every task that reads it.
BIOBERT_DATASETS = Source(
    name="biobert-datasets",
    urls=("http://nlp.dmis.korea.edu/projects/biobert-2020-checkpoints/datasets.tar.gz",),
    archive=True,
)
S800_FOLDER = "datasets/NER/s800"


ENTRIES: list[TaskSpec] = [
    ner_task("linnaeus", crichton("linnaeus", "linnaeus-IOB", *LINNAEUS_DIGESTS.values()), 11935),
    ner_task(
        "bc4chemd",
        Source(name="bc4chemd", urls=tuple(f"{CRICHTON}/BC4CHEMD/{file}" for file in SPLIT_FILES)),
        30682,
    ),
    ner_task("species800", BIOBERT_DATASETS, 5733, folder=S800_FOLDER),
]
