"""`snakemake data` on the real BLURB files served over loopback HTTP (../shared/blurb-raw):
download, extraction, checksum verification and every BLURB preparation rule, with the counts
docs/data.md states. Sources the mirror lacks (EBM-NLP, the manual BioASQ files, and the extra
tasks of the Bio-LM and BioM studies but LINNAEUS and GAD's folds): their branches fail alone."""

from __future__ import annotations

import functools
import json
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from blurb_sizes import ENTITY_MENTIONS, INSTANCES, SPLIT_LISTS

from blurbflow.config import expand_cells
from blurbflow.data.fetch import resolve_url
from blurbflow.data.parsers import bioasq, ddi, ebmpico, hoc
from blurbflow.tasks import TASKS
from blurbflow.tasks.spec import Source

from workflow_helpers import REPO, copy_workflow, planned_jobs, snakemake

MIRROR = REPO.parent / "shared" / "blurb-raw"


def in_mirror(source: Source) -> bool:
    """Whether the loopback mirror holds every file of `source` (a manual one: never)."""
    files = [Path(resolve_url(url, str(MIRROR))) for url in source.urls]
    return not source.manual and bool(files) and all(f.is_file() for f in files)


CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
CONFIG_TASKS = sorted({cell.task for cell in expand_cells(CONFIG).values()})  # what `data` makes
ABSENT_SOURCES = {s.name for t in CONFIG_TASKS for s in TASKS[t].raw if not in_mirror(s)}
ABSENT_TASKS = {t for t in CONFIG_TASKS if set(TASKS[t].sources) & ABSENT_SOURCES}
MIRRORED_TASKS = [t for t in CONFIG_TASKS if t not in ABSENT_TASKS]
pytestmark = [
    pytest.mark.mirror,
    pytest.mark.skipif(not MIRROR.is_dir(), reason=f"{MIRROR} is absent: no real BLURB files here"),
]


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def mirror_url():
    handler = functools.partial(QuietHandler, directory=str(MIRROR))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def data_run(mirror_url, tmp_path_factory):
    workdir = copy_workflow(tmp_path_factory.mktemp("blurb-data"))
    run = snakemake(
        workdir, "data", "--config", f"mirror={mirror_url}", "--cores", "2", "--keep-going"
    )
    return workdir, run


def _stats(workdir: Path, task: str) -> dict:
    return json.loads((workdir / f"resources/data/{task}/stats.json").read_text())["splits"]


@pytest.mark.parametrize("task", sorted(ENTITY_MENTIONS))
def test_ner_entity_mentions(data_run, task):
    workdir, run = data_run
    splits = _stats(workdir, task)
    counts = tuple(splits[s]["entity_mentions"] for s in ("train", "dev", "test"))
    assert counts == ENTITY_MENTIONS[task], run.stdout[-3000:]


@pytest.mark.parametrize("task", sorted(INSTANCES))
def test_instances(data_run, task):
    workdir, run = data_run
    splits = _stats(workdir, task)
    assert tuple(splits[s]["instances"] for s in ("train", "dev", "test")) == INSTANCES[task]


@pytest.mark.parametrize("task", sorted(SPLIT_LISTS))
def test_blurbs_split_lists(data_run, task):
    # EBM PICO's and BioASQ's sources are not in the mirror: their lists are what is checked
    readers = {"ebmpico": ebmpico.split_pmids, "bioasq": bioasq.split_ids}
    readers |= {"ddi": ddi.split_files, "hoc": hoc.split_files}
    raw = data_run[0] / "resources/raw"
    lists = tuple(len(readers[task](raw, split)) for split in ("train", "dev", "test"))
    assert lists == SPLIT_LISTS[task]


def test_sources_absent_from_the_mirror_fail_alone_with_a_reason(data_run):
    workdir, run = data_run
    assert run.returncode != 0  # keep-going finished the rest, then reported the two failures
    bioasq = (workdir / "results/logs/raw/bioasq.log").read_text()
    assert (
        "missing manual download for bioasq" in bioasq and "participants-area.bioasq.org" in bioasq
    )
    assert "resources/manual/bioasq" in bioasq
    ebmnlp = (workdir / "results/logs/raw/ebmnlp.log").read_text()
    assert "HTTP 404" in ebmnlp and "mirror" in ebmnlp
    for task in ABSENT_TASKS:
        assert not (workdir / f"resources/data/{task}").exists()
    assert not list(workdir.glob("resources/raw/.*"))  # no half-fetched temporary folder left


def test_second_data_run_does_nothing_for_prepared_tasks(data_run, mirror_url):
    workdir, _ = data_run
    run = snakemake(workdir, "-n", "data", "--config", f"mirror={mirror_url}")
    jobs = planned_jobs(run.stdout + run.stderr)
    planned = {
        out.split("/")[2] for outs in jobs.values() for out in outs if out.startswith("resources/")
    }
    assert planned <= ABSENT_SOURCES | ABSENT_TASKS, jobs


def test_second_data_run_on_the_mirrored_tasks_does_nothing(data_run, mirror_url):
    workdir, _ = data_run
    study = {"models": ["bert"], "tasks": MIRRORED_TASKS, "recipes": ["standard"], "seeds": 1}
    config = {
        **CONFIG,
        "studies": {"mirrored": {**study, "table": {"rows": "task", "columns": ["model"]}}},
    }
    (workdir / "config/mirrored.yaml").write_text(yaml.safe_dump(config))
    run = snakemake(
        workdir,
        "-n",
        "data",
        "--configfile",
        "config/mirrored.yaml",
        "--config",
        f"mirror={mirror_url}",
    )
    assert run.returncode == 0 and "Nothing to be done" in run.stdout + run.stderr


CHEMPROT_LABELS = {  # measured on the real corpus with the rule of DESIGN §4
    "train": {
        "CPR:3": 756,
        "CPR:4": 2227,
        "CPR:5": 173,
        "CPR:6": 229,
        "CPR:9": 727,
        "false": 13923,
    },
    "dev": {"CPR:3": 546, "CPR:4": 1091, "CPR:5": 115, "CPR:6": 199, "CPR:9": 457, "false": 8860},
    "test": {"CPR:3": 663, "CPR:4": 1655, "CPR:5": 178, "CPR:6": 292, "CPR:9": 642, "false": 12315},
}


def test_chemprot_label_counts(data_run):
    workdir, _ = data_run
    splits = _stats(workdir, "chemprot")
    assert {s: splits[s]["label_counts"] for s in CHEMPROT_LABELS} == CHEMPROT_LABELS
