"""Raw sources: where each dataset comes from and how its files lie once fetched.

`resources/raw/{source}/` holds a source's files as they are after download and archive
extraction (the archive's own member paths). Parsers read only from there, so generated demo
data, the loopback mirror and the original hosts all look the same to them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

CRICHTON = "https://raw.githubusercontent.com/cambridgeltl/MTL-Bioinformatics-2016/master/data"


@dataclass(frozen=True)
class Source:
    name: str
    urls: tuple[str, ...]  # original URLs; each is fetched into resources/raw/{name}/
    archive: bool = False  # extract each fetched file into the source folder
    manual: str | None = None  # manual download: where to get it (BioASQ needs registration)
    manual_files: tuple[str, ...] = ()  # archives the user puts into the manual folder
    nested: tuple[str, ...] = ()  # globs of archives inside archives, extracted in place
    # sha256 of what the parsers read: glob -> digest over sorted "path  sha256" lines
    # (blurbflow.data.fetch.tree_digest). Empty where the files are not obtainable here.
    checksums: dict[str, str] = field(default_factory=dict)


def _ner(name: str, folder: str) -> Source:
    return Source(
        name, tuple(f"{CRICHTON}/{folder}/{split}.tsv" for split in ("train", "devel", "test"))
    )


SOURCES: dict[str, Source] = {
    s.name: s
    for s in [
        _ner("bc5chem", "BC5CDR-chem-IOB"),
        _ner("bc5disease", "BC5CDR-disease-IOB"),
        _ner("ncbidisease", "NCBI-disease-IOB"),
        _ner("bc2gm", "BC2GM-IOB"),
        _ner("jnlpba", "JNLPBA"),
        Source(
            "ebmnlp",
            ("https://github.com/bepnye/EBM-NLP/raw/master/ebm_nlp_2_00.tar.gz",),
            archive=True,
        ),
        Source(
            "chemprot",
            (
                "https://biocreative.bioinformatics.udel.edu/media/store/files/2017/ChemProt_Corpus.zip",
            ),
            archive=True,
            nested=("ChemProt_Corpus/*.zip",),
        ),
        Source(
            "ddi",
            (
                "https://github.com/zhangyijia1979/hierarchical-RNNs-model-for-DDI-extraction/raw/master/"
                "DDIextraction2013/DDIextraction_2013.tar.gz",
            ),
            archive=True,
        ),
        Source(
            "gad",
            ("https://huggingface.co/datasets/bigbio/gad/resolve/main/data/REdata.zip",),
            archive=True,
        ),
        Source(
            "biosses",
            (
                "https://huggingface.co/datasets/bigscience-biomedical/biosses/raw/main/"
                "annotation_pairs_scores.tsv",
            ),
        ),
        Source(
            "hoc",
            ("https://github.com/sb895/Hallmarks-of-Cancer/archive/refs/heads/master.zip",),
            archive=True,
        ),
        Source(
            "pubmedqa",
            (
                "https://raw.githubusercontent.com/pubmedqa/pubmedqa/master/data/ori_pqal.json",
                "https://raw.githubusercontent.com/pubmedqa/pubmedqa/master/data/test_ground_truth.json",
            ),
        ),
        Source(
            "blurb-index",
            ("https://microsoft.github.io/BLURB/sample_code/data_generation.tar.gz",),
            archive=True,
        ),
        Source(
            "bioasq",
            (),
            manual=(
                "BioASQ 7b needs a free registration at "
                "http://participants-area.bioasq.org/datasets/ : "
                "download BioASQ-training7b.zip and Task7BGoldenEnriched.zip"
            ),
            manual_files=("BioASQ-training7b.zip", "Task7BGoldenEnriched.zip"),
        ),
    ]
}

# What the parsers read, per source: the files whose sha256 is pinned in tasks/checksums.py.
READS: dict[str, tuple[str, ...]] = {
    **{
        n: ("train.tsv", "devel.tsv", "test.tsv")
        for n in ("bc5chem", "bc5disease", "ncbidisease", "bc2gm", "jnlpba")
    },
    "gad": ("GAD/*/*.tsv",),
    "biosses": ("annotation_pairs_scores.tsv",),
    "hoc": ("Hallmarks-of-Cancer-master/text/*.txt", "Hallmarks-of-Cancer-master/labels/*.txt"),
    "pubmedqa": ("ori_pqal.json", "test_ground_truth.json"),
    "blurb-index": ("data_generation/indexing/*/*.tsv",),
    "chemprot": ("ChemProt_Corpus/chemprot_*/*.tsv",),
    "ddi": ("DDIextraction_2013/*/*/*.xml",),
}


def _pin_checksums() -> None:
    from blurbflow.tasks.checksums import CHECKSUMS

    for name, digests in CHECKSUMS.items():
        SOURCES[name] = replace(SOURCES[name], checksums=dict(digests))


_pin_checksums()

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
