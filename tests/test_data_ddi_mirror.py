"""DDI on the REAL corpus of the loopback mirror (`../shared/blurb-raw`) with BLURB's real split
lists reproduces DESIGN §4's 25296/2496/5716 instances. The mirror is only read: the archives'
members are extracted into a temporary raw root laid out like `resources/raw/{source}/`."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from blurbflow.data.prepare import prepare_task
from blurbflow.tasks.registry import TASKS

pytestmark = pytest.mark.mirror

MIRROR = Path(__file__).resolve().parents[2] / "shared" / "blurb-raw"
DDI_TAR = (MIRROR / "github.com/zhangyijia1979/hierarchical-RNNs-model-for-DDI-extraction/raw"
           / "master/DDIextraction2013/DDIextraction_2013.tar.gz")
INDEX_TAR = MIRROR / "microsoft.github.io/BLURB/sample_code/data_generation.tar.gz"
EXPECTED = {"train": 25296, "dev": 2496, "test": 5716}


def _extract_tar(archive: Path, prefix: str, target: Path) -> None:
    """Extract the regular-file members under `prefix` (names are checked to stay inside)."""
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
    for archive in (DDI_TAR, INDEX_TAR):
        if not archive.is_file():
            pytest.skip(f"the BLURB mirror file {archive} is absent")
    root = tmp_path_factory.mktemp("ddi-mirror-raw")
    _extract_tar(DDI_TAR, "DDIextraction_2013/", root / "ddi")
    _extract_tar(INDEX_TAR, "data_generation/indexing/DDI/", root / "blurb-index")
    return root


def test_ddi_instances(raw_root, tmp_path):
    stats = prepare_task("ddi", raw_root, tmp_path / "ddi")
    assert {s: stats["splits"][s]["instances"] for s in EXPECTED} == EXPECTED
    for split in EXPECTED:
        assert set(stats["splits"][split]["label_counts"]) == set(TASKS["ddi"].labels)
