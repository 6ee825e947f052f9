"""Every derived artefact verifies before use (blurbflow.util.artefacts): prepared data, tokenized
caches and built models record their files' digests when written; the workflow forces the
producer of a folder whose files changed, and a job that finds its inputs damaged fails before any
seed, naming the file and the rule that rebuilds it. In a real run of the tiny project:

    tokenized train.parquet, a byte flipped  → the workflow re-runs tokenize; every seed is kept
                                               and the table is the one before the damage
    prepared dev.parquet, a byte flipped and → the workflow's stat check cannot see it; the job
    its date put back                          (forced) fails before any seed, naming the file
                                               and rule prepare; the next run re-prepares, keeps
                                               every seed and ends with the same table
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from blurbflow.util.artefacts import RECORD, DamagedArtefact, damaged, verify, write_record

from tiny_project import ARGS, JOB, job_log, run_all, seed_files, tiny_project
from workflow_helpers import planned_jobs, snakemake

TOKENIZED = "resources/tokenized/tiny-biobert/biosses/L512-pair"
DATA = "resources/data/biosses"


def flip_byte(path: Path, keep_date: bool = False) -> None:
    """Damage a file in place: same size, one byte changed (its date kept when asked)."""
    stat = path.stat()
    with open(path, "r+b") as handle:
        handle.seek(stat.st_size // 2)
        byte = handle.read(1)
        handle.seek(stat.st_size // 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    if keep_date:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_the_record_finds_resized_and_changed_files_and_the_job_flags_them(tmp_path):
    for name, text in (("a.parquet", "alpha"), ("b.json", "{}")):
        (tmp_path / name).write_text(text)
    assert damaged(tmp_path) is None  # no record: written before records were
    assert write_record(tmp_path, "tokenized")["files"].keys() == {"a.parquet", "b.json"}
    assert damaged(tmp_path) is None and damaged(tmp_path, strict=True) is None

    flip_byte(tmp_path / "a.parquet", keep_date=True)
    assert damaged(tmp_path) is None  # size and date kept: the cheap check trusts them
    assert "a.parquet is damaged: its sha256 differs" in damaged(tmp_path, strict=True)
    with pytest.raises(DamagedArtefact, match=r"a\.parquet is damaged.*rule tokenize rebuilds"):
        verify(tmp_path, "tokenized inputs")
    assert "a.parquet is damaged" in damaged(tmp_path)  # flagged: now the workflow sees it

    record = write_record(tmp_path, "data")
    os.utime(tmp_path / "b.json", ns=(0, 10**18))  # touched (as Snakemake does its outputs)
    verify(tmp_path, "prepared data")  # the same content: passes and records the new date
    redated = json.loads((tmp_path / RECORD).read_text())["files"]["b.json"]
    assert redated == {**record["files"]["b.json"], "mtime_ns": 10**18}
    (tmp_path / "b.json").write_text('{"x": 1}')
    assert "b.json is damaged: 8 bytes, 2 when written" in damaged(tmp_path)
    (tmp_path / "b.json").unlink()
    assert damaged(tmp_path).endswith("b.json is missing")
    (tmp_path / RECORD).write_text("not json")
    assert damaged(tmp_path).endswith(f"{RECORD} is unreadable")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    workdir = tiny_project(tmp_path_factory.mktemp("derived") / "wf")

    def state() -> dict:
        return {
            "table": (workdir / "results/tables/s.csv").read_text(),
            "seeds": seed_files(workdir),
            "log": job_log(workdir),
        }

    def record(folder: str) -> dict:
        return json.loads((workdir / folder / RECORD).read_text())

    first = run_all(workdir)
    assert first.returncode == 0, first.stderr[-3000:]
    found = {
        "workdir": workdir,
        "first": state(),
        "records": {f: record(f) for f in (TOKENIZED, DATA)},
    }

    flip_byte(workdir / TOKENIZED / "train.parquet")
    found["cache_dry"] = snakemake(workdir, "-n", *ARGS, "all")
    found["cache_run"] = run_all(workdir)
    found["cache"] = state()

    flip_byte(workdir / DATA / "dev.parquet", keep_date=True)
    found["data_dry"] = snakemake(workdir, "-n", *ARGS, "all")
    found["data_forced"] = snakemake(workdir, "all", *ARGS, "--forcerun", f"{JOB}/seeds.json")
    found["data_forced_state"] = {"seeds": seed_files(workdir), "log": job_log(workdir)}
    found["data_flag"] = record(DATA).get("damaged")
    found["data_run"] = run_all(workdir)
    found["data"] = state()
    return found


@pytest.mark.e2e
def test_the_producers_record_their_files(runs):
    assert set(runs["records"][TOKENIZED]["files"]) == {
        "train.parquet",
        "dev.parquet",
        "test.parquet",
        "meta.json",
    }
    assert runs["records"][TOKENIZED]["producer"] == "tokenize"
    assert runs["records"][DATA]["producer"] == "prepare"
    model = json.loads((runs["workdir"] / "resources/models/tiny-biobert" / RECORD).read_text())
    assert model["producer"] == "build_demo_model" and "model.safetensors" in model["files"]


@pytest.mark.e2e
def test_a_damaged_cache_is_rebuilt_and_the_run_ends_with_the_same_table(runs):
    dry = runs["cache_dry"]
    assert f"damaged since written, rebuilt: {TOKENIZED}" in dry.stderr
    assert planned_jobs(dry.stdout)["tokenize"] == [TOKENIZED]
    assert runs["cache_run"].returncode == 0, runs["cache_run"].stderr[-3000:]
    assert damaged(runs["workdir"] / TOKENIZED, strict=True) is None  # rebuilt
    assert "seed 1: kept (ok" in runs["cache"]["log"] and "seed 2: kept (ok" in runs["cache"]["log"]
    assert runs["cache"]["seeds"] == runs["first"]["seeds"]  # no seed retrained or rewritten
    assert runs["cache"]["table"] == runs["first"]["table"]


@pytest.mark.e2e
def test_a_job_finding_damaged_inputs_fails_before_any_seed_naming_the_file_and_rule(runs):
    dry = runs["data_dry"]  # size and date kept: only a reader's full check can see it
    assert "Nothing to be done" in dry.stdout + dry.stderr
    assert runs["data_forced"].returncode != 0
    log = runs["data_forced_state"]["log"]
    assert f"{DATA}/dev.parquet is damaged: its sha256 differs" in log
    assert "rule prepare rebuilds it" in log and "seed 1: training" not in log
    assert runs["data_forced_state"]["seeds"] == runs["cache"]["seeds"]  # untouched
    assert "dev.parquet is damaged" in runs["data_flag"]  # so the next run re-prepares


@pytest.mark.e2e
def test_the_next_run_rebuilds_the_flagged_data_and_ends_with_the_same_table(runs):
    run = runs["data_run"]
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"damaged since written, rebuilt: {DATA}" in run.stderr
    assert damaged(runs["workdir"] / DATA, strict=True) is None
    assert "seed 1: kept (ok" in runs["data"]["log"] and "seed 2: kept (ok" in runs["data"]["log"]
    assert runs["data"]["seeds"] == runs["first"]["seeds"]
    assert runs["data"]["table"] == runs["first"]["table"]
