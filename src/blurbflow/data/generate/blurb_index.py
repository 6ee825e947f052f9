"""Synthetic BLURB split index (`data_generation.tar.gz`, extracted): comma-separated file names
per split under `data_generation/indexing/{folder}/`. Only the folders of generated sources are
written; their names must match what the source generators produce.
"""

from __future__ import annotations

from pathlib import Path

from blurbflow.data.generate.bioasq import bioasq_split_ids
from blurbflow.data.generate.ddi import ddi_split_files
from blurbflow.data.generate.ebmnlp import ebmnlp_split_pmids
from blurbflow.data.generate.hoc import hoc_split_pmids

INDEXING = "data_generation/indexing"


def _hoc(folder: Path) -> None:
    for split, pmids in hoc_split_pmids().items():
        # Comma-separated `{PMID}.txt` names, no final newline, as in BLURB's bundle.
        (folder / f"{split}_pmid.tsv").write_text(
            ",".join(f"{p}.txt" for p in pmids), encoding="utf-8"
        )


def _ddi(folder: Path) -> None:
    for split, paths in ddi_split_files().items():
        # Newline-separated paths relative to DDIextraction_2013/, no final newline.
        (folder / f"{split}_files.tsv").write_text("\n".join(paths), encoding="utf-8")


def _ebmnlp(folder: Path) -> None:
    for split, pmids in ebmnlp_split_pmids().items():
        (folder / f"{split}_pmid.tsv").write_text(",".join(pmids), encoding="utf-8")


def _bioasq(folder: Path) -> None:
    for split, ids in bioasq_split_ids().items():
        (folder / f"{split}_id.tsv").write_text(",".join(ids), encoding="utf-8")


# indexing folder -> writer; other generated sources add their lists here.
WRITERS = {"HoC": _hoc, "DDI": _ddi, "ebmnlp": _ebmnlp, "BioASQ": _bioasq}


def generate(out_dir: Path, seed: int) -> None:
    del seed  # the lists depend only on the (seed-independent) synthetic PMIDs
    for name, write in WRITERS.items():
        folder = out_dir / INDEXING / name
        folder.mkdir(parents=True, exist_ok=True)
        write(folder)
