"""A release that changes a parser or an encoder reaches exactly the results it changes
(blurbflow.stage_versions, docs/extending.md). A tiny project with two tasks (biosses: the pair
encoder; gad: its own parser, outside the model's pre-training corpus) runs once; then snakemake
runs it with a copy of blurbflow whose stage versions are bumped, with the same output and with
a real change, and the test checks which steps ran and which seed files were rewritten: a
re-made stage whose content is unchanged starts no fine-tuning job (blurbflow.stage_bytes), a
changed one starts exactly the jobs reading it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tiny_project import ARGS, tiny_config, write_config
from workflow_helpers import REPO, copy_workflow, snakemake

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TASKS = ("biosses", "gad")
VERSIONS = "src/blurbflow/stage_versions.py"
# a real parser change: gad's training set loses its first row
GAD_FIX = {
    "src/blurbflow/data/parsers/gad.py": [
        ("f) for n, f in train_rows[:train_lines]]", "f) for n, f in train_rows[1:train_lines]]")
    ]
}


def release(tmp_path: Path, name: str, edits: dict[str, list[tuple[str, str]]]) -> dict:
    """A copy of blurbflow's source with `edits` (file -> [(old, new)]), as the PYTHONPATH of
    a snakemake run (its jobs inherit it)."""
    root = tmp_path / name
    shutil.copytree(REPO / "src", root / "src")
    for path, changes in edits.items():
        text = (root / path).read_text()
        for old, new in changes:
            assert text.count(old) == 1, (path, old)
            text = text.replace(old, new)
        (root / path).write_text(text)
    return {"PYTHONPATH": str(root / "src")}


def run_all(workdir: Path, env: dict | None = None):
    """Up to the study's tables (the report adds nothing here, and a run of its own)."""
    return snakemake(workdir, *ARGS, "results/tables/s.csv", env=env)


def seed_files(workdir: Path, task: str) -> dict:
    return {
        str(path.relative_to(workdir)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted((workdir / "results/cells").glob(f"*/{task}/**/seed*/result.json"))
    }


def tables(workdir: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted((workdir / "results/tables").glob("*"))}


def started(run, rule: str) -> list[str]:
    """The wildcards of each `rule` job the run started (its log's job blocks)."""
    blocks = re.split(r"\n\s*(?:local)?(?:rule|checkpoint) ", run.stderr)[1:]
    found = []
    for block in blocks:
        if block.startswith(f"{rule}:"):
            wildcards = re.search(r"^\s*wildcards: (.*)$", block.split("\n\n")[0], re.M)
            found.append(wildcards.group(1) if wildcards else "")
    return found


def ran(run, rule: str, task: str) -> bool:
    """Whether the run's log shows a `rule` job for `task`."""
    return any(f"task={task}," in f"{w}," for w in started(run, rule))


def jobs_of(workdir: Path, task: str) -> set[str]:
    """The job folders of `task` (each holds its seeds)."""
    return {str(Path(path).parent.parent) for path in seed_files(workdir, task)}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    workdir = copy_workflow(tmp_path_factory.mktemp("stage-versions"))
    config = tiny_config()
    config["studies"]["s"]["tasks"] = list(TASKS)
    config["models"]["tiny-biobert"]["corpus_tasks"] = ["biosses"]  # gad's data: not in it
    write_config(workdir, config)
    first = run_all(workdir)
    assert first.returncode == 0, first.stderr[-3000:]
    return workdir


def test_stage_versions_rerun_exactly_what_changed(project, tmp_path):
    before = {task: seed_files(project, task) for task in TASKS}
    tables_before = tables(project)
    assert all(before.values()) and tables_before

    # 1. gad's parser and the pair encoder bumped, their output unchanged
    same = release(
        tmp_path,
        "same-output",
        {VERSIONS: [('    "gad": 1,', '    "gad": 2,'), ('    "pair": 1,', '    "pair": 2,')]},
    )
    run = run_all(project, env=same)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "stage version changed, re-run: resources/data/gad (parser gad 1 → 2)" in run.stderr
    assert "encoder pair 1 → 2" in run.stderr
    assert "now: 'stage versions: parser gad 2'" in run.stderr  # the dry run's reason, too
    assert ran(run, "prepare", "gad") and ran(run, "tokenize", "gad")
    assert ran(run, "tokenize", "biosses") and not ran(run, "prepare", "biosses")
    # the re-made folders' content is what the jobs computed from: their dates go back after
    # one check, and no fine-tuning job starts (the aggregation, planned after them, runs)
    assert len(started(run, "stage_bytes")) == 1 and started(run, "finetune") == []
    checked = json.loads((project / "results/stage-bytes.json").read_text())
    assert "resources/data/gad" in checked["restored"] and checked["changed"] == []
    assert {f.split("/")[3] for f in checked["restored"] if "/tokenized/" in f} == set(TASKS)
    for task in TASKS:  # no seed re-trained: content identity kept every one
        assert seed_files(project, task) == before[task], task
    assert tables(project) == tables_before
    dry = snakemake(project, *ARGS, "-n", "results/tables/s.csv", env=same)
    assert "Nothing to be done" in dry.stdout + dry.stderr  # and the next run has nothing to do
    meta = next((project / "resources/tokenized").glob("*/biosses/*/meta.json"))
    assert json.loads(meta.read_text())["versions"]["encoder pair"] == 2

    # 2. gad's parser really changes (one training row less), with its bump
    parser = release(
        tmp_path,
        "parser-fix",
        {
            VERSIONS: [('    "gad": 1,', '    "gad": 3,'), ('    "pair": 1,', '    "pair": 2,')],
            **GAD_FIX,
        },
    )
    run = run_all(project, env=parser)
    assert run.returncode == 0, run.stderr[-3000:]
    assert ran(run, "prepare", "gad") and not ran(run, "prepare", "biosses")
    assert not ran(run, "tokenize", "biosses")
    # exactly the jobs reading the changed folders ran: every gad job, once
    gad_jobs = started(run, "finetune")
    assert len(gad_jobs) == len(jobs_of(project, "gad")) and all(
        "task=gad," in f"{w}," for w in gad_jobs
    )
    after = {task: seed_files(project, task) for task in TASKS}
    assert after["biosses"] == before["biosses"]
    assert set(after["gad"]) == set(before["gad"])
    assert all(after["gad"][path][1] != before["gad"][path][1] for path in before["gad"]), (
        "every gad seed re-trained on the changed data"
    )

    # 3. the pair encoder really changes (its two texts swapped), with its bump
    encoder = release(
        tmp_path,
        "encoder-fix",
        {
            VERSIONS: [('    "gad": 1,', '    "gad": 3,'), ('    "pair": 1,', '    "pair": 3,')],
            **GAD_FIX,
            "src/blurbflow/train/encode.py": [
                (
                    '"pair": _pair("text_a", "text_b", True)',
                    '"pair": _pair("text_b", "text_a", True)',
                )
            ],
        },
    )
    gad_files = seed_files(project, "gad")
    run = run_all(project, env=encoder)
    assert run.returncode == 0, run.stderr[-3000:]
    assert ran(run, "tokenize", "biosses") and not ran(run, "tokenize", "gad")
    biosses_jobs = started(run, "finetune")
    assert len(biosses_jobs) == len(jobs_of(project, "biosses"))
    assert all("task=biosses," in f"{w}," for w in biosses_jobs)
    assert seed_files(project, "gad") == gad_files
    changed = seed_files(project, "biosses")
    assert all(changed[path][1] != after["biosses"][path][1] for path in after["biosses"])
