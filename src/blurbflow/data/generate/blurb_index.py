"""Synthetic BLURB split index (`data_generation.tar.gz`, extracted): comma-separated file names
per split under `data_generation/indexing/{folder}/`. Only the folders of generated sources are
written; their names must match what the source generators produce.
"""

from __future__ import annotations

from pathlib import Path

from blurbflow.data.generate.hoc import hoc_split_pmids

INDEXING = "data_generation/indexing"


def _hoc(folder: Path) -> None:
    for split, pmids in hoc_split_pmids().items():
        # Comma-separated `{PMID}.txt` names, no final newline, as in BLURB's bundle.
        (folder / f"{split}_pmid.tsv").write_text(",".join(f"{p}.txt" for p in pmids),
                                                   encoding="utf-8")


# indexing folder -> writer; other generated sources add their lists here.
WRITERS = {"HoC": _hoc}


def generate(out_dir: Path, seed: int) -> None:
    del seed  # the lists depend only on the (seed-independent) synthetic PMIDs
    for name, write in WRITERS.items():
        folder = out_dir / INDEXING / name
        folder.mkdir(parents=True, exist_ok=True)
        write(folder)
