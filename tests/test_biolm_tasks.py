"""Bio-LM's public NER tasks (blurbflow.tasks.biolm): LINNAEUS fetched from the real mirror by its
registry entry (over loopback HTTP, its pinned sha256 verified) and prepared with the counts of
Crichton et al.'s files; BC4CHEMD and Species-800, absent from the mirror, prepared from
generated files in their real layouts."""

from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from blurbflow.data.parsers.conll import read_conll
from blurbflow.tasks import biolm
from blurbflow.tasks.builtin import CRICHTON
from blurbflow.tasks.registry import BUILTIN, get_task
from blurbflow.tasks.sources import SOURCES

from data_helpers import generate_and_prepare, write
from workflow_helpers import REPO

MIRROR = REPO.parent / "shared" / "blurb-raw"
BIOLM_NER = ("linnaeus", "bc4chemd", "species800")
# (sentences, entity mentions, tokens) per split of Crichton et al.'s linnaeus-IOB
LINNAEUS_COUNTS = {
    "train": (11935, 2119, 280960),
    "dev": (4078, 711, 93815),
    "test": (7142, 1433, 164653),
}


def test_biolm_entries_are_ner_tasks_of_one_source_each():
    entries = {spec.name: spec for spec in biolm.ENTRIES}  # a later entry may join them
    assert list(entries)[: len(BIOLM_NER)] == list(BIOLM_NER)
    for spec in (entries[name] for name in BIOLM_NER):
        assert BUILTIN[spec.name] is spec and get_task(spec.name) is spec
        assert (spec.type, spec.parser, spec.labels, spec.seeds) == (
            "ner",
            "conll",
            ("B", "I", "O"),
            5,
        )
        (source,) = spec.raw
        assert SOURCES[source.name] is source and source.generated
    assert {name: get_task(name).size for name in BIOLM_NER} == {
        "linnaeus": 11935,
        "bc4chemd": 30682,
        "species800": 5733,
    }


def test_sources_and_what_is_pinned():
    linnaeus, bc4chemd, species800 = (get_task(name).raw[0] for name in BIOLM_NER)
    files = ("train.tsv", "devel.tsv", "test.tsv")
    assert linnaeus.urls == tuple(f"{CRICHTON}/linnaeus-IOB/{f}" for f in files)
    assert linnaeus.checksums == biolm.LINNAEUS_DIGESTS and set(linnaeus.checksums) == set(files)
    assert bc4chemd.urls == tuple(f"{CRICHTON}/BC4CHEMD/{f}" for f in files)
    assert species800 is biolm.BIOBERT_DATASETS and species800.archive
    assert species800.urls[0].endswith("/biobert-2020-checkpoints/datasets.tar.gz")
    assert get_task("euadr").raw == (species800,)  # one download for both corpora
    assert get_task("species800").options == {"folder": "datasets/NER/s800"}
    # not in the mirror: recorded at fetch time, not verified (like EBM-NLP)
    assert bc4chemd.checksums == {} and species800.checksums == {}


def test_crichton_species_tags_collapse(tmp_path):
    """Crichton et al.'s typed tags (B-Species, I-Species) and -DOCSTART- lines, as in the
    mirror's linnaeus-IOB, read as BLURB's untyped B/I/O."""
    path = write(
        tmp_path / "train.tsv",
        "-DOCSTART-\tO\n\nLarvae\tO\nof\tO\nDrosophila\tB-Species\nmelanogaster\tI-Species\n"
        ".\tO\n\nMice\tB-Species\n\t\n",
    )
    assert read_conll(path, "linnaeus") == [
        (["Larvae", "of", "Drosophila", "melanogaster", "."], ["O", "O", "B", "I", "O"]),
        (["Mice"], ["B"]),
    ]


@pytest.mark.parametrize("task", ["bc4chemd", "species800"])
def test_generated_sources_prepare(tmp_path_factory, task):
    raw_root, stats, frames = generate_and_prepare(tmp_path_factory, task)
    spec = get_task(task)
    folder = raw_root / spec.sources[0] / spec.options.get("folder", "")
    assert sorted(p.name for p in folder.iterdir()) == ["devel.tsv", "test.tsv", "train.tsv"]
    for split, frame in frames.items():
        tags = [tag for row in frame["tags"] for tag in row]
        assert stats["splits"][split]["instances"] == len(frame) > 0
        assert stats["splits"][split]["entity_mentions"] == tags.count("B") > 0
        assert set(tags) == {"B", "I", "O"}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.mark.mirror
@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"{MIRROR} is absent: no real BLURB files here")
def test_linnaeus_from_the_mirror(tmp_path, capsys):
    """The registry entry as it is: its URLs (through the mirror), its pinned digests."""
    from blurbflow.data.fetch import fetch_source
    from blurbflow.data.prepare import prepare_task

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(MIRROR)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        summary = fetch_source("linnaeus", tmp_path / "raw" / "linnaeus", mirror=url)
    finally:
        server.shutdown()
    assert summary["verified"] == biolm.LINNAEUS_DIGESTS
    stats = prepare_task("linnaeus", tmp_path / "raw", tmp_path / "linnaeus")
    counts = {
        split: (s["instances"], s["entity_mentions"], s["tokens"])
        for split, s in stats["splits"].items()
    }
    with capsys.disabled():
        print(f"\nLINNAEUS (sentences, entity mentions, tokens) per split: {counts}")
    assert counts == LINNAEUS_COUNTS
