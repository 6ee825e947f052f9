"""Users' own tasks from the config, no code: the docs example (read from docs/data.md) runs
through snakemake on a generated CoNLL NER corpus and a generated JSON Lines classification
corpus; editing one file re-runs that task's cells only. Unit tests cover the readers and the
key-path errors."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from blurbflow.config.validate import check_local_models, check_names
from blurbflow.data.errors import DataFormatError
from blurbflow.data.parsers import parse_task
from blurbflow.data.prepare import prepare_task
from blurbflow.tasks import TASKS, get_task, register_tasks
from blurbflow.tasks.registry import prepare_inputs
from blurbflow.util.errors import ConfigError

from model_helpers import tiny_config
from workflow_helpers import REPO, copy_workflow, planned_jobs, snakemake

CHEMICALS = ["aspirin", "ibuprofen", "heparin", "warfarin", "insulin", "cisplatin"]
FILLERS = ["patients", "received", "daily", "after", "surgery", "with", "low", "dose", "the"]


def readme_example() -> dict:
    """The YAML block of docs/data.md "Your own tasks" (the README links there)."""
    assert "docs/data.md#your-own-tasks" in (REPO / "README.md").read_text()
    text = (REPO / "docs/data.md").read_text()
    section = text.split("## Your own tasks", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    return yaml.safe_load(block)


def write_corpora(root: Path, config: dict, seed: int = 0) -> None:
    """Files at the paths the config's tasks name: CoNLL sentences whose chemicals are B tags,
    JSONL abstracts whose decision follows a cue word."""
    rng = random.Random(seed)
    sizes = {"train": 120, "dev": 30, "test": 30}
    for split, n in sizes.items():
        sentences = []
        for _ in range(n):
            words = rng.sample(FILLERS, 5)
            chemical = rng.choice(CHEMICALS)
            words.insert(rng.randrange(len(words)), chemical)
            sentences.append(
                "\n".join(f"{w}\t{'B-Chemical' if w == chemical else 'O'}" for w in words)
            )
        path = root / config["tasks"]["mycorpus"]["files"][split]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(sentences) + "\n")
        lines = []
        for i in range(n):
            include = i % 2 == 0
            cue = "randomized" if include else "anecdotal"
            words = [*rng.sample(FILLERS, 4), cue, rng.choice(CHEMICALS)]
            lines.append(
                json.dumps(
                    {"abstract": " ".join(words), "decision": "include" if include else "exclude"}
                )
            )
        path = root / config["tasks"]["mytriage"]["files"][split]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")


def write_model(folder: Path, texts: list[str]) -> None:
    """A seeded tiny BERT with a vocabulary trained on the corpora (save_pretrained folder)."""
    import torch
    from transformers import BertModel

    from blurbflow.models.build import train_tokenizer

    torch.manual_seed(0)
    tokenizer = train_tokenizer(texts, 120)
    BertModel(tiny_config(len(tokenizer), 1, max_position_embeddings=128)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


@pytest.fixture
def own_tasks(tmp_path, monkeypatch):
    """The docs example's corpora in tmp_path (the working folder), its tasks registered."""
    monkeypatch.chdir(tmp_path)
    config = readme_example()
    write_corpora(tmp_path, config)
    return config  # conftest forgets the registered tasks after the test


def test_readme_tasks_parse_prepare_and_record_their_files(own_tasks, tmp_path):
    register_tasks(own_tasks)
    ner, triage = get_task("mycorpus"), get_task("mytriage")
    assert (ner.type, ner.labels, ner.metric) == ("ner", ("B", "I", "O"), "entity_f1")
    assert (triage.type, triage.labels, triage.metric) == (
        "cls",
        ("exclude", "include"),
        "macro_f1",
    )
    assert prepare_inputs("mytriage") == [
        own_tasks["tasks"]["mytriage"]["files"][s] for s in ("train", "dev", "test")
    ]
    frames = parse_task("mycorpus", tmp_path / "unused")
    assert [len(frames[s]) for s in ("train", "dev", "test")] == [120, 30, 30]
    assert set(frames["train"]["tags"].iloc[0]) == {"B", "O"}
    stats = prepare_task("mytriage", tmp_path / "unused", tmp_path / "out")
    assert stats["splits"]["train"] == {
        "instances": 120,
        "label_counts": {"exclude": 60, "include": 60},
    }
    assert set(stats["source_files"]) == set(own_tasks["tasks"]["mytriage"]["files"].values())
    assert all(re.fullmatch(r"[0-9a-f]{64}", d) for d in stats["source_files"].values())
    test = pd.read_parquet(tmp_path / "out/test.parquet")
    assert list(test.columns) == ["id", "split", "text", "label"] and len(test) == 30
    assert json.loads((tmp_path / "out/stats.json").read_text())["checksums"]["test"]


def test_bad_files_name_file_line_and_field(own_tasks, tmp_path):
    register_tasks(own_tasks)
    path = Path(own_tasks["tasks"]["mytriage"]["files"]["dev"])
    path.write_text(json.dumps({"abstract": "x", "decision": "maybe"}) + "\n")
    with pytest.raises(DataFormatError, match=rf"{path}:1: label: 'maybe' is not one of"):
        parse_task("mytriage", tmp_path)
    path.write_text(json.dumps({"summary": "x", "decision": "include"}) + "\n")
    with pytest.raises(DataFormatError, match=r"no 'abstract' field.*columns\.text"):
        parse_task("mytriage", tmp_path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t["mytriage"].update(type="summary"), r"tasks\.mytriage\.type: 'summary'"),
        (
            lambda t: t["mytriage"].update(format="conll"),
            r"tasks\.mytriage\.format: conll does not",
        ),
        (lambda t: t["mytriage"].pop("labels"), r"tasks\.mytriage\.labels: a cls task needs"),
        (lambda t: t["mytriage"].update(metric="pearson"), r"tasks\.mytriage\.metric: 'pearson'"),
        (lambda t: t["mycorpus"]["files"].pop("dev"), r"tasks\.mycorpus\.files: give the three"),
        (lambda t: t.update(gad={"type": "re"}), r"tasks\.gad\.type: 'gad' is a built-in task"),
        (
            lambda t: t.update(mycorpsu={"max_length": 8}),
            r"tasks\.mycorpsu: unknown task .*mycorpus",
        ),
    ],
)
def test_wrong_entries_stop_with_the_key_path(own_tasks, edit, message):
    edit(own_tasks["tasks"])
    with pytest.raises(ConfigError, match=message):
        check_names(own_tasks)


def test_missing_file_stops_before_any_job(own_tasks):
    Path(own_tasks["tasks"]["mytriage"]["files"]["dev"]).unlink()
    with pytest.raises(ConfigError, match=r"tasks\.mytriage\.files\.dev: file .* does not exist"):
        check_local_models(own_tasks)


# Scripts whose steps never look a task up (raw sources, the demo model, hub snapshots, the
# re-made stages' bytes).
NO_TASKS = {
    "stage_bytes.py",
    "fetch.py",
    "generate.py",
    "build_model.py",
    "prefetch.py",
    "prefetch_check.py",
    "prefetch_url.py",
}


def test_every_job_that_looks_tasks_up_registers_the_configs_own_from_snakemake_config():
    """A job process knows the config's own tasks only from the config Snakemake hands its
    script (no environment variable carries them): each script registers them before its step."""
    for script in sorted((REPO / "workflow/scripts").glob("*.py")):
        text = script.read_text()
        registers = "register_tasks(snakemake.config)" in text
        assert registers == (script.name not in NO_TASKS), script.name
        if registers:  # before the step runs (`plan` prints to the terminal: call, no log)
            step = re.search(r"\b(run_rule|call)\(", text)
            assert step and text.index("register_tasks(snakemake.config)") < step.start(), script


@pytest.mark.e2e
def test_readme_example_runs_and_an_edited_file_reruns_its_cells_only(tmp_path):
    workdir = copy_workflow(tmp_path / "wf")
    config = readme_example()
    write_corpora(workdir, config)
    texts = [
        line
        for split in ("train",)
        for task in ("mycorpus", "mytriage")
        for line in (workdir / config["tasks"][task]["files"][split]).read_text().split("\n")
    ]
    write_model(workdir / config["models"]["my-bert"]["path"], texts)
    (workdir / "my-tasks.yaml").write_text(yaml.safe_dump(config))

    run = snakemake(workdir, "--configfile", "my-tasks.yaml", "--cores", "2", "all")
    assert run.returncode == 0, run.stderr[-5000:]
    cells = pd.read_parquet(workdir / "results/cells.parquet")
    assert sorted(cells["task"]) == ["mycorpus", "mytriage"]
    assert set(cells["status"]) == {"ok"}, cells[["task", "status", "error"]]
    assert sorted(cells["task_type"]) == ["cls", "ner"]
    table = (workdir / "results/tables/mine.csv").read_text()
    assert "mycorpus" in table and "mytriage" in table
    stats = json.loads((workdir / "resources/data/mytriage/stats.json").read_text())
    assert config["tasks"]["mytriage"]["files"]["test"] in stats["source_files"]

    again = snakemake(workdir, "all", "-n", "--configfile", "my-tasks.yaml")
    assert again.returncode == 0, again.stdout[-3000:]
    assert "finetune" not in planned_jobs(again.stdout)  # nothing is stale
    test_file = workdir / config["tasks"]["mytriage"]["files"]["test"]
    test_file.write_text(test_file.read_text().replace('"exclude"', '"include"', 1))
    dry = snakemake(workdir, "all", "-n", "--configfile", "my-tasks.yaml")
    assert dry.returncode == 0, dry.stdout[-3000:]
    jobs = planned_jobs(dry.stdout)
    assert jobs["prepare"] == ["resources/data/mytriage/train.parquet"]
    assert [Path(job).parts[2:4] for job in jobs["finetune"]] == [("my-bert", "mytriage")]

    manifests = {
        task: next((workdir / "results/cells/my-bert" / task).rglob("seeds.json"))
        for task in ("mycorpus", "mytriage")
    }
    before = {task: path.stat().st_mtime_ns for task, path in manifests.items()}
    rerun = snakemake(workdir, "all", "--cores", "2", "--configfile", "my-tasks.yaml")
    assert rerun.returncode == 0, rerun.stderr[-5000:]
    assert manifests["mycorpus"].stat().st_mtime_ns == before["mycorpus"]
    assert manifests["mytriage"].stat().st_mtime_ns > before["mytriage"]
    counts = json.loads((workdir / "resources/data/mytriage/stats.json").read_text())
    assert counts["splits"]["test"]["label_counts"] == {"exclude": 14, "include": 16}
    assert set(pd.read_parquet(workdir / "results/cells.parquet")["status"]) == {"ok"}


def test_dataset_format_reads_splits_through_datasets(tmp_path, monkeypatch):
    """`format: hf` goes through datasets.load_dataset with the split mapping (here a local
    dataset folder: the hub is not reachable from the tests)."""
    import datasets

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "cache")
    for split, n in (("train", 6), ("validation", 4), ("test", 2)):
        rows = [
            json.dumps({"sentence": f"aspirin {i}", "y": "yes" if i % 2 else "no"})
            for i in range(n)
        ]
        (tmp_path / "ds").mkdir(exist_ok=True)
        (tmp_path / "ds" / f"{split}.jsonl").write_text("\n".join(rows) + "\n")
    entry = {
        "type": "cls",
        "format": "hf",
        "labels": ["no", "yes"],
        "columns": {"text": "sentence", "label": "y"},
        "dataset": {
            "path": "ds",
            "revision": "0" * 40,
            "splits": {"train": "train", "dev": "validation", "test": "test"},
        },
    }
    register_tasks({"tasks": {"hfcorpus": entry}})
    try:
        frames = parse_task("hfcorpus", tmp_path)
    finally:
        del TASKS["hfcorpus"]
    assert {split: len(frame) for split, frame in frames.items()} == {
        "train": 6,
        "dev": 4,
        "test": 2,
    }
    assert frames["dev"]["label"].tolist() == ["no", "yes", "no", "yes"]
    with pytest.raises(ConfigError, match=r"tasks\.x\.dataset\.revision: missing"):
        check_names({"tasks": {"x": {**entry, "dataset": {**entry["dataset"], "revision": ""}}}})


def test_runtime_estimate_comes_from_the_prepared_data(own_tasks, tmp_path):
    from blurbflow.cluster import UNKNOWN_INSTANCES, cell_resources, is_short, train_instances

    from model_helpers import make_options

    register_tasks(own_tasks)
    options = make_options(task="mytriage", epochs=100, max_length=256)
    assert train_instances("mytriage") == UNKNOWN_INSTANCES and not is_short(options)
    guess = cell_resources(options, "large")["runtime"]
    prepare_task("mytriage", tmp_path, tmp_path / "resources/data/mytriage")
    assert train_instances("mytriage") == 120 and is_short(options)
    assert cell_resources(options, "large")["runtime"] < guess
    own_tasks["tasks"]["mytriage"]["size"] = 5000
    register_tasks(own_tasks)
    assert train_instances("mytriage") == 5000  # the entry's size wins
