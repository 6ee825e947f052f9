"""A stage re-made with the content its jobs computed from gets its dates back, so no fine-tuning
job runs (blurbflow.stage_bytes): which folders a version bump re-makes, and the check after them
on small folders written here. The workflow end to end: tests/test_stage_versions_e2e.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from blurbflow import stage_bytes
from blurbflow.config import cell_jobs, expand_cells
from blurbflow.config.identity import data_checksums, tokenized_identity
from blurbflow.util import paths
from blurbflow.util.artefacts import read_record, write_record

from workflow_helpers import REPO

OLD = 1_000_000_000_000_000_000  # the dates before the re-run (ns)


def _demo():
    config = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    return config, cell_jobs(expand_cells(config))


def test_a_bumped_task_re_makes_its_data_its_tokenized_folders_and_a_model_built_on_it():
    config, jobs = _demo()
    built = next(n for n, s in config["models"].items() if s.get("build"))
    corpus = config["models"][built].get("corpus_tasks") or sorted({j.task for j in jobs.values()})
    task = corpus[0]
    folders = stage_bytes.rerun_folders(jobs, config, {paths.data(task): ["parser 1 → 2"]})
    model = os.path.normpath(config["models"][built]["path"])
    assert folders[paths.data(task)] == "data" and folders[model] == "model"
    expected = {
        stage_bytes.tokenized_folder(j) for j in jobs.values() if j.task == task or j.model == built
    }
    assert {f for f, kind in folders.items() if kind == "tokenized"} == expected
    assert list(folders.values()) == sorted(
        folders.values(), key=["data", "model", "tokenized"].index
    )
    waiting, readers, inputs = stage_bytes.check_plan(jobs, config, folders)
    assert waiting == {p for p, j in jobs.items() if j.task == task or j.model == built}
    assert inputs[model] == [paths.data(task)]
    assert readers[paths.data(task)] == [
        f"{p}/seeds.json" for p, j in jobs.items() if j.task == task
    ]


def test_nothing_outdated_plans_no_check():
    config, jobs = _demo()
    assert stage_bytes.rerun_folders(jobs, config, {}) == {}
    assert stage_bytes.check_plan(jobs, config, {}) == (set(), {}, {})


def _write(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).write_bytes(content)


def _project(data: bytes, tokens: bytes) -> tuple[dict, dict, dict]:
    """A data folder and a tokenized folder as the stages write them (in the working folder),
    and a job whose manifest records the identity of the first ones written."""
    data_dir, tokenized = "resources/data/t", "resources/tokenized/m/t/L8"
    _write(Path(data_dir), {f"{s}.parquet": data + s.encode() for s in ("train", "dev", "test")})
    _write(Path(data_dir), {"stats.json": b"{}"})
    write_record(data_dir, "data")
    _write(Path(tokenized), {f"{s}.parquet": tokens for s in ("train", "dev", "test")})
    _write(
        Path(tokenized), {"meta.json": b'{"versions": {"encode": 2}}', ".snakemake_timestamp": b""}
    )
    manifest = Path("results/cells/m/t/r/h/seeds.json")
    if not manifest.exists():
        identity = {"tokenized": tokenized_identity(tokenized), "data": data_checksums(data_dir)}
        _write(manifest.parent, {"seeds.json": json.dumps({"identity": identity}).encode()})
    folders = {data_dir: "data", tokenized: "tokenized"}
    readers = {data_dir: [str(manifest)], tokenized: [str(manifest)]}
    inputs = {data_dir: [], tokenized: [data_dir]}
    return folders, readers, inputs


def test_the_same_content_gets_its_dates_back_and_a_change_keeps_the_new_ones(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    folders, readers, inputs = _project(b"rows", b"ids")
    dates = {
        path: OLD
        for folder, kind in folders.items()
        for path in stage_bytes.visible_files(folder, kind)
    }
    # the stages re-made both folders with the same content (as a bump does: new dates)
    folders, readers, inputs = _project(b"rows", b"ids")
    found = stage_bytes.check(folders, readers, inputs, dates)
    assert found == {"restored": list(folders), "changed": []}
    for path in dates:
        assert os.stat(path).st_mtime_ns == OLD, path
    record = read_record("resources/data/t")  # stat-only again: its dates as they are
    assert all(entry["mtime_ns"] == OLD for entry in record["files"].values())

    # the data re-made with other rows: it keeps its new dates, and so does the tokenized
    # folder made from it (whose date must not fall behind its input's)
    folders, readers, inputs = _project(b"other rows", b"ids")
    found = stage_bytes.check(folders, readers, inputs, dates)
    assert found == {"restored": [], "changed": list(folders)}
    assert all(os.stat(path).st_mtime_ns != OLD for path in dates)
