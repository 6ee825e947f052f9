"""Raw sources: where each dataset comes from and how its files lie once fetched.

`resources/raw/{source}/` holds a source's files as they are after download and archive
extraction (the archive's own member paths). Parsers read only from there, so generated demo
data, the loopback mirror and the original hosts all look the same to them.
"""

from __future__ import annotations

from blurbflow.tasks.builtin import CRICHTON
from blurbflow.tasks.registry import ENTRIES
from blurbflow.tasks.spec import Source


def _sources() -> dict[str, Source]:
    """Every raw source of the built-in tasks; a source shared by several tasks (BLURB's split
    index) must be the same object in each entry."""
    found: dict[str, Source] = {}
    for spec in ENTRIES:
        for source in spec.raw:
            if found.setdefault(source.name, source) != source:
                raise RuntimeError(
                    f"task {spec.name}: source {source.name!r} differs from the "
                    "one another task declares"
                )
    return found


SOURCES: dict[str, Source] = _sources()
# What the parsers read, per source: the files whose sha256 is pinned in the task entries.
READS: dict[str, tuple[str, ...]] = {
    name: tuple(source.checksums) for name, source in SOURCES.items() if source.checksums
}
__all__ = ["CRICHTON", "READS", "SOURCES", "Source"]

# Where each source's files lie inside resources/raw/{source}/ (members the parsers read).
LAYOUT = {
    "ner": ("train.tsv", "devel.tsv", "test.tsv"),
    # split in train|test, fold 1..10; train.tsv: sentence<TAB>label, no header;
    # test.tsv: header "index<TAB>sentence<TAB>label"
    "gad": "GAD/{fold}/{split}.tsv",
    "biosses": "annotation_pairs_scores.tsv",
    # text: one sentence a line; labels: one line of "<chunk" per sentence, no final newline
    "hoc": "Hallmarks-of-Cancer-master/{text,labels}/{PMID}.txt",
    "pubmedqa": ("ori_pqal.json", "test_ground_truth.json"),
    # HoC/{train,dev,test}_pmid.tsv: comma-separated "{PMID}.txt" names, no final newline
    "blurb-index": "data_generation/indexing/{DDI,HoC,ebmnlp,BioASQ}/...",
}
