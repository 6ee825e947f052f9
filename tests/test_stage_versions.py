"""Stage versions (blurbflow.stage_versions): what enters the prepare, tokenize and build params,
what a folder records, how an outdated folder is found and what `snakemake plan` says a bump
costs. tests/test_stage_versions_e2e.py runs the bumps through snakemake."""

from __future__ import annotations

import json

import pytest
from test_plan import config, finish

from blurbflow import stage_versions
from blurbflow.plan.estimate import plan_config
from blurbflow.plan.text import format_plan
from blurbflow.tasks.registry import definition, get_task, register_tasks


def test_first_versions_leave_the_params_as_they_were():
    """A project finished before stage versions existed re-runs nothing after updating."""
    assert definition("chemprot") == ""
    assert stage_versions.bumped(stage_versions.prepare_versions(get_task("chemprot"))) == {}
    assert stage_versions.bumped(stage_versions.tokenize_versions(get_task("chemprot"))) == {}


def test_a_bump_enters_the_prepare_params(monkeypatch):
    monkeypatch.setitem(stage_versions.PARSERS, "conll", 2)
    assert definition("bc5chem") == "stage versions: parser conll 2"
    assert definition("chemprot") == ""  # another parser's tasks keep theirs
    monkeypatch.setitem(stage_versions.ENCODERS, "words", 3)
    assert stage_versions.bumped(stage_versions.tokenize_versions(get_task("bc5chem"))) == {
        "encoder words": 3
    }


def test_a_user_task_definition_keeps_its_form(monkeypatch, tmp_path):
    files = {split: str(tmp_path / f"{split}.tsv") for split in ("train", "dev", "test")}
    register_tasks(
        {"tasks": {"mine": {"type": "cls", "format": "tsv", "labels": ["x", "y"], "files": files}}}
    )
    plain = json.loads(definition("mine"))
    assert "version" not in plain and "stage_versions" not in plain
    monkeypatch.setitem(stage_versions.PARSERS, "local", 2)
    assert json.loads(definition("mine")) == {**plain, "stage_versions": {"parser local": 2}}


def test_changes_name_each_number_that_moved():
    current = {"prepare": 1, "parser chemprot": 3, "task chemprot": 1}
    assert stage_versions.changes(None, current) == ["parser chemprot 1 → 3"]
    assert stage_versions.changes({"parser chemprot": 2}, current) == ["parser chemprot 2 → 3"]
    assert stage_versions.changes(dict(current), current) == []


def test_outdated_reads_each_folders_record(tmp_path):
    current = {"encode": 1, "encoder words": 2}
    written = {name: tmp_path / name for name in ("old", "new", "bare", "unwritten", "broken")}
    for folder in written.values():
        folder.mkdir()
    (written["old"] / "meta.json").write_text(json.dumps({"versions": {"encoder words": 1}}))
    (written["new"] / "meta.json").write_text(json.dumps({"versions": current}))
    (written["bare"] / "meta.json").write_text(json.dumps({"splits": {}}))  # before versions
    (written["broken"] / "meta.json").write_text("{not json")
    found = stage_versions.outdated((str(f), "meta.json", current) for f in written.values())
    assert found == {
        str(written["old"]): ["encoder words 1 → 2"],
        str(written["bare"]): ["encoder words 1 → 2"],
    }


def test_plan_counts_what_a_bump_may_retrain(tmp_path, monkeypatch):
    jobs = finish(tmp_path, config())
    for task in ("gad", "biosses"):  # prepared at the first versions
        folder = tmp_path / "resources/data" / task
        folder.mkdir(parents=True)
        versions = stage_versions.prepare_versions(get_task(task))
        (folder / "stats.json").write_text(json.dumps({"versions": versions}))
    assert plan_config(config(), str(tmp_path))["stage_versions"]["folders"] == {}

    monkeypatch.setitem(stage_versions.PARSERS, "gad", 2)
    plan = plan_config(config(), str(tmp_path))
    bump = plan["stage_versions"]
    assert bump["folders"] == {"resources/data/gad": ["parser gad 1 → 2"]}
    gad_jobs = [job for job in jobs.values() if job.task == "gad"]
    assert bump["jobs"] == len(gad_jobs) == 8
    assert bump["cells"] == sum(len(job.seeds) for job in gad_jobs)
    assert bump["hours"] > 0
    assert plan["remaining"]["cells"] == 0  # nothing must re-train: only if the bytes change
    assert plan["remaining"]["jobs"] == 8  # but the jobs run, to check
    text = format_plan(plan)
    assert "resources/data/gad: parser gad 1 → 2" in text
    assert f"The 8 jobs after them run again: their {bump['cells']} cells re-train" in text


@pytest.mark.parametrize("task", ["bc5chem", "chemprot", "biosses", "hoc", "squad"])
def test_every_task_has_its_numbers(task):
    spec = get_task(task)
    prepare = stage_versions.prepare_versions(spec)
    assert set(prepare) == {"prepare", f"parser {spec.parser}", f"task {task}"}
    assert f"encoder {spec.kind.inputs}" in stage_versions.tokenize_versions(spec)


def test_an_extraction_bump_renames_the_url_models_marker(monkeypatch):
    """A URL model's unpacking has no params to carry a number: a bump is a new marker path,
    so `prefetch_url` unpacks again and the jobs after it re-check their seeds."""
    import blurbflow.models.archive as archive

    url, sha = "https://example.org/m.tar.gz", "ab" * 32
    assert archive.archive_marker("cache", url, sha).name == f"url--{sha}.json"
    monkeypatch.setattr(archive, "EXTRACT", 2)
    assert archive.archive_marker("cache", url, sha).name == f"url--{sha}--extract2.json"
    assert archive.is_archive_marker(archive.archive_marker("cache", url, sha))


def test_a_tokenizer_setting_counts_only_for_the_models_that_set_it():
    spec = get_task("bc5chem")
    plain = stage_versions.tokenize_versions(spec, {"revision": "main"})
    assert "tokenizer add_prefix_space" not in plain
    prefixed = stage_versions.tokenize_versions(spec, {"add_prefix_space": True})
    number = stage_versions.TOKENIZER_SETTINGS["add_prefix_space"]
    assert prefixed["tokenizer add_prefix_space"] == number
    assert stage_versions.bumped(prefixed) == {"tokenizer add_prefix_space": number}
