"""ChemProt on the REAL corpus of the loopback mirror (`../shared/blurb-raw`) reproduces BLURB's
counts exactly (DESIGN §4, §11). The mirror is only read: the inner zips of ChemProt_Corpus.zip
are extracted in place into a temporary `raw/chemprot/ChemProt_Corpus/`, as the data step does."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from blurbflow.data.prepare import prepare_task

pytestmark = pytest.mark.mirror

MIRROR = Path(__file__).resolve().parents[2] / "shared" / "blurb-raw"
CHEMPROT_ZIP = (MIRROR / "biocreative.bioinformatics.udel.edu/media/store/files/2017"
                / "ChemProt_Corpus.zip")
INNER = ("chemprot_training.zip", "chemprot_development.zip", "chemprot_test_gs.zip")
SPLITS = ("train", "dev", "test")
INSTANCES = (18035, 11268, 15745)
LABEL_COUNTS = {  # measured on the real corpus with the rule of DESIGN §4
    "train": {"CPR:3": 756, "CPR:4": 2227, "CPR:5": 173, "CPR:6": 229, "CPR:9": 727,
              "false": 13923},
    "dev": {"CPR:3": 546, "CPR:4": 1091, "CPR:5": 115, "CPR:6": 199, "CPR:9": 457,
            "false": 8860},
    "test": {"CPR:3": 663, "CPR:4": 1655, "CPR:5": 178, "CPR:6": 292, "CPR:9": 642,
             "false": 12315},
}


def _extract_tsv(archive: zipfile.ZipFile, target: Path) -> None:
    for member in archive.infolist():
        name = PurePosixPath(member.filename)
        if member.is_dir() or name.suffix != ".tsv":
            continue
        assert not name.is_absolute() and ".." not in name.parts, member.filename
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(archive.read(member))


@pytest.fixture(scope="module")
def raw_root(tmp_path_factory) -> Path:
    if not CHEMPROT_ZIP.is_file():
        pytest.skip(f"the BLURB mirror's ChemProt corpus is not at {CHEMPROT_ZIP}")
    root = tmp_path_factory.mktemp("chemprot-raw")
    corpus = root / "chemprot" / "ChemProt_Corpus"
    with zipfile.ZipFile(CHEMPROT_ZIP) as outer:
        for inner in INNER:
            with zipfile.ZipFile(io.BytesIO(outer.read(f"ChemProt_Corpus/{inner}"))) as nested:
                _extract_tsv(nested, corpus)
    return root


def test_chemprot_reproduces_blurb(raw_root, tmp_path):
    stats = prepare_task("chemprot", raw_root, tmp_path / "chemprot")
    assert tuple(stats["splits"][s]["instances"] for s in SPLITS) == INSTANCES
    assert {s: stats["splits"][s]["label_counts"] for s in SPLITS} == LABEL_COUNTS
