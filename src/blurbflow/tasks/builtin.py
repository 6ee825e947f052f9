"""The 13 BLURB tasks, one entry each: type, metric, labels, input length, raw sources (URLs and
the pinned sha256 of what the parser reads), parser and typical training size. Adding a task of
an existing type is one entry here (plus a parser in `blurbflow.data.parsers` if its format is
new); docs/data.md describes how BLURB prepares each one. The chance baseline
follows from the metric and the training labels (`blurbflow.metrics.chance`).

Digests: `blurbflow.data.fetch.tree_digest` over the original files. EBM-NLP and BioASQ were not
obtainable where these were pinned: their digests are recorded at fetch time, not verified.
"""

from __future__ import annotations

from blurbflow.tasks.spec import Source, TaskSpec

CRICHTON = "https://raw.githubusercontent.com/cambridgeltl/MTL-Bioinformatics-2016/master/data"
NER_LABELS = ("B", "I", "O")
PICO_LABELS = ("I-INT", "I-OUT", "I-PAR", "O")
HOC_HALLMARKS = (
    "activating invasion and metastasis",
    "avoiding immune destruction",
    "cellular energetics",
    "enabling replicative immortality",
    "evading growth suppressors",
    "genomic instability and mutation",
    "inducing angiogenesis",
    "resisting cell death",
    "sustaining proliferative signaling",
    "tumor promoting inflammation",
)

# BLURB's split index (DDI, HoC, EBM-NLP, BioASQ document ids), shared by four tasks.
BLURB_INDEX = Source(
    name="blurb-index",
    urls=("https://microsoft.github.io/BLURB/sample_code/data_generation.tar.gz",),
    archive=True,
    checksums={
        "data_generation/indexing/*/*.tsv": "d779151640191722da82c0ef41d969796597fe8727ef3884794794d4b3e7c987",  # noqa: E501
    },
)


def crichton(name: str, folder: str, train: str, devel: str, test: str) -> Source:
    """A NER corpus of Crichton et al.'s collection: train/devel/test.tsv with their digests."""
    digests = {"train.tsv": train, "devel.tsv": devel, "test.tsv": test}
    return Source(
        name=name,
        urls=tuple(f"{CRICHTON}/{folder}/{file}" for file in digests),
        checksums=digests,
    )


# The pinned digest (see above) of each file of the NER corpora BLURB takes from Crichton et al.
CRICHTON_PINS = """
0a044afcb5e3ff7fe18144af6dd24d934022dfda9de2402f4333e2b20188a008  BC5CDR-chem-IOB/train.tsv
02eb8daf2c643b5d423b1a871522f9e66dff0abfcf37276b4909412d72f0af82  BC5CDR-chem-IOB/devel.tsv
6a50087fd47314f92174bf36199053e30f46b059ca6618c9bf8c26e3ab878eee  BC5CDR-chem-IOB/test.tsv
2d6ddd52fd05280d55f11c9cb35484e31a414ad7cf8667a996563aba6efe1692  BC5CDR-disease-IOB/train.tsv
601a6fa7332a9f09b69ff34c55ed9c6e7bb8abf6f70beca39c54d4b61bdb267f  BC5CDR-disease-IOB/devel.tsv
0c4d44f7b7ff06e93e1117d7bd6389aef10a7baa5db41de995d01802c4d6e4bd  BC5CDR-disease-IOB/test.tsv
2ae6e98a7201ece76ebf687bf3c7a3ca5892233a63f6c5a576520aad3b008ad3  NCBI-disease-IOB/train.tsv
7b6b45a23cbac2eff245840e3d9e94cfd632827a5d17afd573f624cdaa91350f  NCBI-disease-IOB/devel.tsv
9c4ff4a20672d7da0e5877bbf7875ad8b92e36f0ee9d2cdad5a728d7f0ff3241  NCBI-disease-IOB/test.tsv
1546d44e133c8b7e7bef0eb4fdf8120324f627f8bc03706cf06d07d1612ad99f  BC2GM-IOB/train.tsv
956581fd40e34579af5300f3cdc650117c0616549d82798a0b16e3aedb2a9ced  BC2GM-IOB/devel.tsv
d741434b6b2416fe31b3130a3273ae8fb0da022c6f57c925d954f47dd5e64a6b  BC2GM-IOB/test.tsv
8dfa29b19252af8962725eb651503944362b99c329729d5d9499eab4b2d8e724  JNLPBA/train.tsv
6b10200124e350a5daaeb9c81a85aa25fbd404b6420ed9e3d27dae8f331178fd  JNLPBA/devel.tsv
c27e85983c75b949673710c37d138c06137e35ff985cb7b419bedd185f8a0f7c  JNLPBA/test.tsv
"""
CRICHTON_DIGESTS = {
    path: digest for digest, path in map(str.split, CRICHTON_PINS.strip().splitlines())
}


def ner_task(name: str, raw: Source, size: int, **options) -> TaskSpec:
    """A NER task read by the CoNLL parser, tags collapsed to B/I/O."""
    return TaskSpec(
        name=name, type="ner", labels=NER_LABELS, parser="conll", size=size, raw=(raw,),
        options=options,
    )  # fmt: skip


def _ner(name: str, folder: str, size: int) -> TaskSpec:
    """A BLURB NER task: one corpus of Crichton et al.'s collection."""
    files = ("train.tsv", "devel.tsv", "test.tsv")
    digests = (CRICHTON_DIGESTS[f"{folder}/{file}"] for file in files)
    return ner_task(name, crichton(name, folder, *digests), size)


# fmt: off
ENTRIES: list[TaskSpec] = [
    _ner("bc5chem", "BC5CDR-chem-IOB", 4560),
    _ner("bc5disease", "BC5CDR-disease-IOB", 4560),
    _ner("ncbidisease", "NCBI-disease-IOB", 5424),
    _ner("bc2gm", "BC2GM-IOB", 12574),
    _ner("jnlpba", "JNLPBA", 18607),
    TaskSpec(
        name="ebmpico", type="pico", labels=PICO_LABELS, parser="ebmpico", size=33000,
        raw=(Source(name="ebmnlp",
                    urls=("https://github.com/bepnye/EBM-NLP/raw/master/ebm_nlp_2_00.tar.gz",),
                    archive=True),
             BLURB_INDEX),
    ),
    TaskSpec(
        name="chemprot", type="re", metric="micro_f1", max_length=256, parser="chemprot",
        labels=("CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false"), negative_label="false",
        size=18035,
        raw=(Source(
            name="chemprot",
            urls=("https://biocreative.bioinformatics.udel.edu/media/store/files/2017/"
                  "ChemProt_Corpus.zip",),
            archive=True, nested=("ChemProt_Corpus/*.zip",),
            checksums={"ChemProt_Corpus/chemprot_*/*.tsv":
                       "0037cc04d4d1c63faa1075b5f4793e9b5837d869241911c34ecc631d34d19182"}),),
    ),
    TaskSpec(
        name="ddi", type="re", metric="micro_f1", max_length=256, parser="ddi", size=25296,
        labels=("DDI-advise", "DDI-effect", "DDI-false", "DDI-int", "DDI-mechanism"),
        negative_label="DDI-false",
        raw=(Source(
            name="ddi",
            urls=("https://github.com/zhangyijia1979/hierarchical-RNNs-model-for-DDI-extraction/"
                  "raw/master/DDIextraction2013/DDIextraction_2013.tar.gz",),
            archive=True,
            checksums={"DDIextraction_2013/*/*/*.xml":
                       "cf838eb23504c18465ec18737693162a5abea745f3048b695c916bff7e99028b"}),
             BLURB_INDEX),
    ),
    TaskSpec(
        name="gad", type="re", metric="positive_f1", max_length=128, parser="gad", size=4261,
        labels=("0", "1"), negative_label="0", options={"train_lines": 4261}, folds=10,
        raw=(Source(
            name="gad",
            urls=("https://huggingface.co/datasets/bigbio/gad/resolve/main/data/REdata.zip",),
            archive=True,
            checksums={"GAD/*/*.tsv":
                       "c500fd21536a08bb12a685d6cc6eaf7bcc60baee0b54d2079f9312479304753d"}),),
    ),
    TaskSpec(
        name="biosses", type="sts", parser="biosses", size=64, seeds=10,
        raw=(Source(
            name="biosses",
            urls=("https://huggingface.co/datasets/bigscience-biomedical/biosses/raw/main/"
                  "annotation_pairs_scores.tsv",),
            checksums={"annotation_pairs_scores.tsv":
                       "bb235f8609e3bcc90993447c221fd4a8b986673661764bf7cd58dc521f642fba"}),),
    ),
    TaskSpec(
        name="hoc", type="doccls", labels=HOC_HALLMARKS, parser="hoc", size=1295,
        raw=(Source(
            name="hoc",
            urls=("https://github.com/sb895/Hallmarks-of-Cancer/archive/refs/heads/master.zip",),
            archive=True,
            checksums={
                "Hallmarks-of-Cancer-master/text/*.txt":
                    "de070491e3f7abd2be6805cccf0f524df7ecd03691bd68480eb6b4a21d275f42",
                "Hallmarks-of-Cancer-master/labels/*.txt":
                    "2e9b27b0d940b76de067bfc2d44526a522074c43432290952670ef339590a9eb",
            }),
             BLURB_INDEX),
    ),
    TaskSpec(
        name="pubmedqa", type="qa", labels=("maybe", "no", "yes"), parser="pubmedqa", size=450,
        seeds=10,
        raw=(Source(
            name="pubmedqa",
            urls=("https://raw.githubusercontent.com/pubmedqa/pubmedqa/master/data/ori_pqal.json",
                  "https://raw.githubusercontent.com/pubmedqa/pubmedqa/master/data/"
                  "test_ground_truth.json"),
            checksums={
                "ori_pqal.json":
                    "50bd5559349f4bcf8360224e27e5f1690b3f694da838c4d283575174cfcc3f14",
                "test_ground_truth.json":
                    "1e04252bb5698dd258b46f50fd720f0460143162955f62de8f0098a1285db05a",
            }),),
    ),
    TaskSpec(
        name="bioasq", type="qa", labels=("no", "yes"), parser="bioasq", size=670, seeds=10,
        raw=(Source(
            name="bioasq",
            manual=("BioASQ 7b needs a free registration at "
                    "http://participants-area.bioasq.org/datasets/ : "
                    "download BioASQ-training7b.zip and Task7BGoldenEnriched.zip"),
            manual_files=("BioASQ-training7b.zip", "Task7BGoldenEnriched.zip")),
             BLURB_INDEX),
    ),
]
# fmt: on
