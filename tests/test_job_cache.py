"""The config as validated and its fine-tuning jobs, kept for every later process that reads the
workflow with the same config and code (blurbflow.job_cache); and the workflow's use of it: a
second read validates and expands nothing, yet plans the same jobs."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from blurbflow import job_cache
from blurbflow.config import cell_jobs, expand_cells

from workflow_helpers import REPO, copy_workflow, planned_jobs, snakemake


def _demo() -> dict:
    return yaml.safe_load((REPO / "config/demo.yaml").read_text())


def test_what_a_process_saves_the_next_one_with_the_same_key_loads(tmp_path):
    config = _demo()
    jobs = cell_jobs(expand_cells(config))
    path = job_cache.cache_path(config, [], tmp_path)
    assert job_cache.load(path) is None  # nothing yet: the process validates and expands
    validated = {**copy.deepcopy(config), "filled": "by the schema"}
    job_cache.save(path, job_cache.Planned(validated, jobs))
    planned = job_cache.load(path)
    assert planned.config == validated and planned.jobs == jobs
    assert job_cache.cache_path(copy.deepcopy(config), [], tmp_path) == path


class _Planted:
    def __reduce__(self):  # unpickling would call os.system
        return (os.system, ("touch planted-ran",))


@pytest.mark.parametrize("planted", [_Planted(), ({"a": 1}, {"job": os.getcwd})])
def test_a_planted_file_naming_anything_but_the_packages_classes_is_refused(
    planted, tmp_path, monkeypatch
):
    import pickle

    monkeypatch.chdir(tmp_path)
    path = job_cache.cache_path(_demo(), [], tmp_path)
    path.write_bytes(pickle.dumps(planted))
    assert job_cache.load(path) is None  # refused like an unreadable file: planned afresh
    assert not (tmp_path / "planted-ran").exists()


def test_another_config_or_changed_code_is_another_key(tmp_path):
    config = _demo()
    path = job_cache.cache_path(config, [], tmp_path)
    assert job_cache.cache_path({**config, "code_version": "2"}, [], tmp_path) != path
    code = tmp_path / "rules"
    code.mkdir()
    (code / "a.smk").write_text("rule a: pass\n")
    with_code = job_cache.cache_path(config, [code], tmp_path)
    assert with_code != path
    (code / "a.smk").write_text("rule a:  pass\n")  # a changed rule file
    assert job_cache.cache_path(config, [code], tmp_path) != with_code


def test_an_unreadable_file_is_expanded_around_and_old_keys_go(tmp_path):
    config = _demo()
    path = job_cache.cache_path(config, [], tmp_path)
    path.write_bytes(b"not a pickle")
    assert job_cache.load(path) is None
    others = []
    for version in range(job_cache.KEEP + 2):
        other = job_cache.cache_path({**config, "code_version": str(version)}, [], tmp_path)
        job_cache.save(other, job_cache.Planned({}, {}))
        os.utime(other, (version, version))  # oldest first
        others.append(other)
    kept = sorted(p.name for p in tmp_path.glob("jobs-*"))
    # the last one saved, and the KEEP newest of the others
    assert kept == sorted(p.name for p in others[-job_cache.KEEP - 1 :])


@pytest.mark.slow
@pytest.mark.e2e
def test_a_second_read_of_the_workflow_plans_from_the_cache(tmp_path):
    """Two dry runs of the demo: the second plans the fine-tuning jobs the first left in the
    file (one removed from it, to show where they come from)."""
    workdir = copy_workflow(tmp_path / "wf")
    args = ("-n", "all", "--configfile", "config/demo.yaml")
    first = snakemake(workdir, *args)
    assert first.returncode == 0, first.stderr[-3000:]
    (cache,) = (workdir / ".snakemake/blurbflow").glob("jobs-*.pickle")
    planned = job_cache.load(cache)
    assert planned.config["studies"] and planned.jobs
    one = sorted(planned.jobs)[0]
    del planned.jobs[one]
    job_cache.save(cache, planned)
    second = snakemake(workdir, *args)
    assert second.returncode == 0, second.stderr[-3000:]
    expected = sorted(planned_jobs(first.stdout)["finetune"])
    expected.remove(f"{one}/seeds.json")
    assert sorted(planned_jobs(second.stdout)["finetune"]) == expected
