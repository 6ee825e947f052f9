"""The parsers on the REAL BLURB files of the loopback mirror (`../shared/blurb-raw`, laid out as
host/path of each URL) reproduce DESIGN §4's counts. The mirror is only read: the needed files are
copied or extracted into a temporary raw root laid out like `resources/raw/{source}/`."""

from __future__ import annotations

import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from blurbflow.data.prepare import prepare_task
from blurbflow.tasks.registry import HOC_HALLMARKS

pytestmark = pytest.mark.mirror

MIRROR = Path(__file__).resolve().parents[2] / "shared" / "blurb-raw"
CRICHTON = MIRROR / "raw.githubusercontent.com/cambridgeltl/MTL-Bioinformatics-2016/master/data"
NER_FOLDERS = {"bc5chem": "BC5CDR-chem-IOB", "bc5disease": "BC5CDR-disease-IOB",
               "ncbidisease": "NCBI-disease-IOB", "bc2gm": "BC2GM-IOB", "jnlpba": "JNLPBA"}
GAD_ZIP = MIRROR / "huggingface.co/datasets/bigbio/gad/resolve/main/data/REdata.zip"
HOC_ZIP = MIRROR / "github.com/sb895/Hallmarks-of-Cancer/archive/refs/heads/master.zip"
INDEX_TAR = MIRROR / "microsoft.github.io/BLURB/sample_code/data_generation.tar.gz"
BIOSSES_TSV = (MIRROR / "huggingface.co/datasets/bigscience-biomedical/biosses/raw/main"
               / "annotation_pairs_scores.tsv")
PUBMEDQA = MIRROR / "raw.githubusercontent.com/pubmedqa/pubmedqa/master/data"

ENTITY_MENTIONS = {
    "bc5chem": (5203, 5347, 5385),
    "bc5disease": (4182, 4246, 4424),
    "ncbidisease": (5134, 787, 960),
    "bc2gm": (15197, 3061, 6325),
    "jnlpba": (46750, 4551, 8662),
}
INSTANCES = {
    "gad": (4261, 535, 534),
    "biosses": (64, 16, 20),
    "hoc": (1295, 186, 371),
    "pubmedqa": (450, 50, 500),
}
SPLITS = ("train", "dev", "test")


def _extract_zip(archive: Path, prefix: str, target: Path) -> None:
    """Extract the regular-file members under `prefix` (member names are checked to stay inside)."""
    with zipfile.ZipFile(archive) as zf:
        for member in zf.infolist():
            name = Path(member.filename)
            if member.is_dir() or not member.filename.startswith(prefix):
                continue
            assert not name.is_absolute() and ".." not in name.parts, member.filename
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_bytes(zf.read(member))


def _extract_tar(archive: Path, prefix: str, target: Path) -> None:
    with tarfile.open(archive) as tf:
        for member in tf.getmembers():
            name = Path(member.name)
            if not member.isfile() or not member.name.startswith(prefix):
                continue
            assert not name.is_absolute() and ".." not in name.parts, member.name
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_bytes(tf.extractfile(member).read())


@pytest.fixture(scope="module")
def raw_root(tmp_path_factory) -> Path:
    if not MIRROR.is_dir():
        pytest.skip(f"the BLURB mirror is not at {MIRROR}")
    root = tmp_path_factory.mktemp("mirror-raw")
    for source, folder in NER_FOLDERS.items():
        (root / source).mkdir()
        for name in ("train.tsv", "devel.tsv", "test.tsv"):
            shutil.copyfile(CRICHTON / folder / name, root / source / name)
    _extract_zip(GAD_ZIP, "GAD/", root / "gad")
    _extract_zip(HOC_ZIP, "Hallmarks-of-Cancer-master/", root / "hoc")
    _extract_tar(INDEX_TAR, "data_generation/indexing/HoC/", root / "blurb-index")
    (root / "biosses").mkdir()
    shutil.copyfile(BIOSSES_TSV, root / "biosses" / BIOSSES_TSV.name)
    (root / "pubmedqa").mkdir()
    for name in ("ori_pqal.json", "test_ground_truth.json"):
        shutil.copyfile(PUBMEDQA / name, root / "pubmedqa" / name)
    return root


@pytest.mark.parametrize("task", sorted(ENTITY_MENTIONS))
def test_ner_entity_mentions(raw_root, tmp_path, task):
    stats = prepare_task(task, raw_root, tmp_path / task)
    found = tuple(stats["splits"][s]["entity_mentions"] for s in SPLITS)
    assert found == ENTITY_MENTIONS[task]


@pytest.mark.parametrize("task", sorted(INSTANCES))
def test_instances(raw_root, tmp_path, task):
    stats = prepare_task(task, raw_root, tmp_path / task)
    assert tuple(stats["splits"][s]["instances"] for s in SPLITS) == INSTANCES[task]
    if task == "hoc":
        assert set(stats["splits"]["train"]["label_counts"]) == set(HOC_HALLMARKS)
    if task in ("gad", "pubmedqa"):
        labels = {label for s in SPLITS for label in stats["splits"][s]["label_counts"]}
        assert labels == ({"0", "1"} if task == "gad" else {"yes", "no", "maybe"})
