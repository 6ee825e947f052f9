"""Every command in the fenced ```bash blocks of the README and of the pages it leads to
(docs/*.md, benchmarks/README.md, config/README.md), typed as printed, on a copy of the workflow
whose `.venv` is this one: PATH without the venv's bin, PYTHONPATH unset, nothing activated
(issues 11 and 30). Each command is run, dry-run (`-n`) where it would train, submit or reach the
internet, or skipped with its reason; a command of any page missing from that page's PLAN fails
the test, and so does a planned command gone from its page."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hub_helpers import FakeHub
from test_data_download import (  # noqa: F401
    ABSENT_SOURCES,
    ABSENT_TASKS,
    ENTITY_MENTIONS,
    INSTANCES,
    MIRROR,
    mirror_url,
)

from workflow_helpers import REPO, _env, copy_workflow, planned_jobs

DEMO_MIRROR = "http://127.0.0.1:8000"  # docs/data.md's example; the loopback mirror replaces it
MY_MODEL = "path/to/my-model"  # the README's local model; the clone holds a tiny BERT there
SCORE = ".venv/bin/snakemake all --configfile config/blurb.yaml"
PLAN_TOTAL = "Total still to run:"  # the last line of `snakemake plan`'s table


@dataclass(frozen=True)
class Plan:
    how: str  # "run", "dry" (adds -n after the snakemake executable), "smoke" (below) or "skip"
    why: str = ""
    expect: str = ""  # a "run" that is no dry run: text its output must hold


EXPORT_DRY_RUN = (
    ".venv/bin/snakemake publish_models --config"
    " 'publish={repo_prefix: my-org/blurbflow-, dry_run: true}'"
)

# Per page: its commands as typed (comments dropped, `shlex.join`ed) and what this test does.
PLAN: dict[str, dict[str, Plan]] = {
    "README.md": {
        "make demo": Plan("skip", "the ~7 min demo; tests/conftest.py `demo` runs its snakemake"),
        "make test": Plan("skip", "the test suite itself"),
        "make test-fast": Plan("skip", "a part of the test suite itself"),
        "make lint": Plan("skip", "CI's .ci/run runs it before the tests"),
        # run for real: the smoke study's data from the loopback mirror of the real BLURB files,
        # PubMedBERT's hub id from a loopback hub (test_scoring_a_local_model_runs_for_real)
        f"{SCORE} config/blurb-smoke.yaml --config model={MY_MODEL}": Plan("smoke"),
        f".venv/bin/snakemake plan --configfile config/blurb.yaml --config model={MY_MODEL}": Plan(
            "run", expect=PLAN_TOTAL
        ),
        f"{SCORE} --config model={MY_MODEL}": Plan("dry", "the full protocol: days on CPU"),
        f"{SCORE} --config model=dmis-lab/biobert-base-cased-v1.1": Plan(
            "dry", "downloads the model and PubMedBERT, trains 13 tasks x 2 models x 6 grid points"
        ),
        ".venv/bin/snakemake prefetch": Plan("dry", "downloads hub weights"),
        ".venv/bin/snakemake plan": Plan("dry", "tests/test_plan.py runs it on a copied workflow"),
        ".venv/bin/snakemake all": Plan("dry", "trains every cell of config.yaml"),
        ".venv/bin/snakemake --profile slurm all": Plan("dry", "submits to SLURM"),
        ".venv/bin/snakemake --configfile my.yaml -n all": Plan("run"),
    },
    "docs/first-hour.md": {
        f"{SCORE} --resources gpu=1 --config model={MY_MODEL}": Plan(
            "dry", "the full protocol on one GPU: days"
        ),
    },
    "docs/data.md": {
        ".venv/bin/snakemake data": Plan("dry", "downloads from the original sources"),
        f".venv/bin/snakemake data --cores 2 --config mirror={DEMO_MIRROR}": Plan("run"),
    },
    "docs/models.md": {
        # config.yaml's studies export no models; tests/test_export_e2e.py runs an export and a
        # dry-run publish on a tiny project, tests/test_export_models.py the upload against a
        # fake hub and both commands below through `blurbflow.cli.main`
        EXPORT_DRY_RUN: Plan("dry", "tests/test_export_e2e.py runs a dry-run publish"),
        ".venv/bin/python -m blurbflow export-models --config my.yaml --study mine": Plan(
            "skip", "needs a finished study `mine`; tests/test_export_models.py runs it"
        ),
        ".venv/bin/python -m blurbflow publish-models --config my.yaml --study mine"
        " --dry-run": Plan(
            "skip", "needs an exported study `mine`; tests/test_export_models.py runs it"
        ),
    },
    # docs/troubleshooting.md (the debug command), on the demo's folders
    "docs/troubleshooting.md": {
        ".venv/bin/snakemake --forcerun"
        " results/cells/tiny-biobert/biosses/standard/lr0.001-bs16/seeds.json"
        " --configfile config/demo.yaml --cores 2": Plan("dry", "trains the job's seeds again"),
        ".venv/bin/blurbflow cell"
        " results/cells/tiny-biobert/biosses/standard/lr0.001-bs16/seed1"
        " --configfile config/demo.yaml --pdb": Plan(
            "skip",
            "an interactive debugger on a finished demo; tests/test_debug_cell.py runs it on a"
            " failed cell with debugger commands on stdin",
        ),
    },
    "docs/extending.md": {
        ".venv/bin/python tests/golden_digests.py --update": Plan(
            "skip", "rewrites the recorded digests; tests/test_golden_digests.py computes the same"
        ),
    },
    # the GPU suite's wheels for a GPU machine (benchmarks/README.md, "GPU suite")
    "benchmarks/README.md": {
        command: Plan("skip", "downloads wheels from PyPI for the device machine's python 3.12")
        for command in (
            ".venv/bin/python -m pip download --no-deps --only-binary=:all: --python-version 3.12"
            " --implementation cp --platform manylinux_2_28_x86_64 --platform"
            " manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl transformers==5.23.0"
            " tokenizers==0.23.3 peft==0.21.2 jsonschema==4.26.0 referencing==0.37.0"
            " jsonschema-specifications==2025.9.1 rpds-py==2026.9.1",
            ".venv/bin/python -m pip wheel --no-deps -w .whl seqeval==1.2.2",
        )
    },
    "docs/slurm.md": {
        ".venv/bin/snakemake plan --configfile my.yaml": Plan("run", expect=PLAN_TOTAL),
        ".venv/bin/python -m blurbflow plan --configfile my.yaml": Plan("run", expect=PLAN_TOTAL),
    },
}


def pages() -> list[str]:
    """The README and every page of documentation that may hold commands, as paths from REPO."""
    found = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    found += [REPO / "benchmarks/README.md", REPO / "config/README.md"]
    return [str(p.relative_to(REPO)) for p in found if p.is_file()]


def bash_commands(page: str) -> list[str]:
    """The commands of a page's ```bash blocks, comments dropped, in order, once each."""
    text = (REPO / page).read_text()
    commands: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words and (command := shlex.join(words)) not in commands:
                commands.append(command)
    return commands


PAGE_COMMANDS = {page: bash_commands(page) for page in pages()}
COMMANDS = list(dict.fromkeys(c for commands in PAGE_COMMANDS.values() for c in commands))
PLANS = {c: plan for planned in PLAN.values() for c, plan in planned.items()}


@pytest.mark.parametrize("page", sorted(set(PAGE_COMMANDS) | set(PLAN)))
def test_every_command_is_planned(page):
    assert PAGE_COMMANDS["README.md"], "no ```bash block in README.md"
    assert page in PAGE_COMMANDS, f"{page} is planned but gone"
    commands, planned = PAGE_COMMANDS[page], PLAN.get(page, {})
    unplanned = [c for c in commands if c not in planned]
    assert not unplanned, f"{page}: commands this test neither runs nor skips: {unplanned}"
    gone = set(planned) - set(commands)
    assert not gone, f"planned but gone from {page}: {gone}"


def test_a_command_on_several_pages_is_planned_once():
    """The same command typed on two pages runs once, so both pages must plan it alike."""
    for command in COMMANDS:
        plans = {page: p[command] for page, p in PLAN.items() if command in p}
        assert len(set(plans.values())) == 1, (command, plans)


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The workflow as a fresh clone has it after `make setup` (this venv), plus my.yaml and a
    tiny BERT in MY_MODEL."""
    return fresh_clone(tmp_path_factory.mktemp("readme"))


def fresh_clone(dest: Path) -> Path:
    workdir = copy_workflow(dest)
    (workdir / ".venv").symlink_to(Path(sys.executable).parent.parent)
    shutil.copy(workdir / "config/demo.yaml", workdir / "my.yaml")
    save_tiny_bert(workdir / MY_MODEL)
    return workdir


def save_tiny_bert(folder: Path) -> None:
    """A seeded 16-wide, 1-layer BERT with 512 positions (BLURB's longest inputs) and a
    WordPiece vocabulary, saved as a model folder."""
    import torch
    from transformers import BertModel

    from blurbflow.models.build import train_tokenizer

    from model_helpers import tiny_config

    torch.manual_seed(0)
    texts = ["aspirin reduces the risk of stroke", "the gene BRCA1 is linked to cancer"] * 20
    tokenizer = train_tokenizer(texts, 120)
    BertModel(tiny_config(len(tokenizer), 1, max_position_embeddings=512)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def run_as_typed(workdir: Path, command: str, extra: dict | None = None):
    env = _env(extra)
    venv_bin = Path(sys.executable).parent.resolve()
    assert all(Path(p).resolve() != venv_bin for p in env["PATH"].split(os.pathsep) if p)
    assert "PYTHONPATH" not in env
    return subprocess.run(
        ["bash", "-c", command], cwd=workdir, env=env, capture_output=True, text=True, timeout=600
    )


def as_run(command: str) -> str:
    if PLANS[command].how == "dry":
        head, _, rest = command.partition(" ")
        assert head.endswith("/snakemake"), f"only a snakemake command has a dry run: {command}"
        return f"{head} -n {rest}"
    return command


@pytest.mark.parametrize(
    "command",
    [c for c in COMMANDS if c in PLANS and PLANS[c].how in ("run", "dry") and "mirror=" not in c],
)
@pytest.mark.slow  # runs snakemake or trains for long; `make test-fast` leaves it out
def test_command_works_as_typed(clone, command):
    run = run_as_typed(clone, as_run(command))
    log = run.stdout + run.stderr
    assert run.returncode == 0, f"{as_run(command)}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    if PLANS[command].expect:  # a real run: it printed what the page says it prints
        assert PLANS[command].expect in log, f"{command}\n{log[-3000:]}"
    else:
        assert "This was a dry-run" in log, f"{command}\n{log[-3000:]}"


@pytest.fixture(scope="module")
def mirror_data_run(clone, mirror_url):  # noqa: F811
    (command,) = [c for c in COMMANDS if "mirror=" in c]
    return run_as_typed(clone, command.replace(DEMO_MIRROR, mirror_url))


@pytest.mark.mirror
@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"{MIRROR} is absent: no real BLURB files here")
def test_data_from_the_mirror_prepares_every_mirrored_task(clone, mirror_data_run):
    log = mirror_data_run.stdout + mirror_data_run.stderr
    for task in sorted({**INSTANCES, **ENTITY_MENTIONS}):
        assert (clone / f"resources/data/{task}/stats.json").is_file(), (task, log[-3000:])
    # config.yaml also names tasks whose sources the mirror lacks: only those may fail
    failed = set(re.findall(r"Error in rule \w+:.*?output: (\S+)", log, re.S))
    assert failed <= {f"resources/raw/{source}" for source in ABSENT_SOURCES}, failed
    assert mirror_data_run.returncode == (1 if failed else 0), log[-3000:]


@pytest.mark.mirror
@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"{MIRROR} is absent: no real BLURB files here")
def test_a_moved_clone_re_runs_nothing(clone, mirror_data_run, mirror_url):  # noqa: F811
    """Rules run their scripts with the interpreter running Snakemake, whose path moved with the
    clone; no command line holds it, so no trigger sees the move."""
    moved = clone.with_name(clone.name + "-moved")
    clone.rename(moved)
    try:  # the moved clone's own `.venv/bin/python`: another interpreter path than the first run's
        run = subprocess.run(
            [
                ".venv/bin/python",
                "-m",
                "snakemake",
                "-n",
                "-p",
                "data",
                "--config",
                f"mirror={mirror_url}",
            ],
            cwd=moved,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        moved.rename(clone)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    planned = {out for outs in planned_jobs(log).values() for out in outs}
    absent = {f"resources/raw/{source}" for source in ABSENT_SOURCES} | {""}  # "": `data`
    absent |= {f"resources/data/{task}/train.parquet" for task in ABSENT_TASKS}
    assert planned <= absent, planned


@pytest.mark.mirror
@pytest.mark.slow
@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"{MIRROR} is absent: no real BLURB files here")
def test_scoring_a_local_model_runs_for_real(tmp_path, mirror_url):  # noqa: F811
    """The smoke line as typed, on a fresh clone whose MY_MODEL is a tiny BERT: the data from
    the mirror (`mirror=` appended), PubMedBERT's hub id from a loopback hub holding the same
    tiny BERT. A first run with one cell made to fail (BLURBFLOW_FAULT): the report prints the
    command that re-runs it by hand with the run's two config files and --config, which works
    as printed; the line again then ends with the table, the report and results/blurb.json of
    both models."""
    (command,) = [c for c in COMMANDS if PLANS.get(c) == Plan("smoke")]
    typed = f"{command} mirror={mirror_url}"
    workdir = fresh_clone(tmp_path / "clone")
    hub_id = yaml.safe_load((workdir / "config/blurb.yaml").read_text())["models"]["pubmedbert"]
    folder = workdir / MY_MODEL
    hub = FakeHub()
    hub.add_repo(hub_id["hub_id"], {p.name: p.read_bytes() for p in folder.iterdir()})
    env = {"HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf-home")}
    try:
        failed = run_as_typed(
            workdir, typed, {**env, "BLURBFLOW_FAULT": "raise@candidate/biosses/*"}
        )
        assert failed.returncode != 0, failed.stderr[-3000:]
        rerun_the_failed_cell(workdir, typed)
        run = run_as_typed(workdir, typed, env)  # trains the failed seed only
    finally:
        hub.stop()
    log = run.stdout[-3000:] + run.stderr[-3000:]
    assert run.returncode == 0, log
    assert (workdir / "results/report.html").is_file() and "This was a dry-run" not in log
    assert "candidate" in (workdir / "results/tables/blurb.md").read_text()
    results = json.loads((workdir / "results/blurb.json").read_text())
    assert results["models"]["candidate"]["path"] == MY_MODEL
    assert results["tasks"] == ["biosses", "pubmedqa"]
    assert [c["model"] for c in results["columns"]] == ["candidate", "pubmedbert"]
    for column in results["columns"]:
        for task, entry in column["tasks"].items():
            assert entry["n"] == 1 and entry["mean"] is not None, (column["model"], task)
        assert column["blurb"]["mean"] is not None
    assert len(results["config_hash"]) == 64 and results["blurbflow_version"]


def rerun_the_failed_cell(workdir: Path, typed: str):
    """The report's command for the one failed cell, run as printed: the config files and
    --config the run was typed with (its target dropped) follow the cell folder."""
    report = (workdir / "results/report.html").read_text()
    (printed,) = [
        html.unescape(c) for c in re.findall(r'<code class="debug"[^>]*>(.*?)</code>', report)
    ]
    (result,) = workdir.glob("results/cells/candidate/biosses/*/*/seed*/result.json")
    cell = str(result.parent.relative_to(workdir))
    files, overrides = typed.split(" all ", 1)[1].split(" --config ")
    flags = f"{files} --config {' '.join(sorted(overrides.split()))}"  # recorded by key
    assert printed == f".venv/bin/blurbflow cell {cell} {flags}", printed
    debugged = run_as_typed(workdir, printed)
    assert debugged.returncode == 0, debugged.stdout[-3000:] + debugged.stderr[-3000:]
    debug_result = json.loads(
        (workdir / cell.replace("results/", "results/debug/", 1) / "result.json").read_text()
    )
    assert debug_result["status"] == "ok" and debug_result["cell"]["model"] == "candidate"


@pytest.mark.slow
def test_the_readme_minimal_config_plans_its_study(clone):
    """The README's minimal config ("Configure"), its model folder pointed at the clone's tiny
    BERT, passes validation and plans its study's cells."""
    section = (REPO / "README.md").read_text().split("## Configure", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    config = yaml.safe_load(block)
    (model,) = config["models"].values()
    model["path"] = MY_MODEL
    (clone / "minimal.yaml").write_text(yaml.safe_dump(config))
    run = run_as_typed(clone, ".venv/bin/snakemake --configfile minimal.yaml -n all")
    log = run.stdout + run.stderr
    assert run.returncode == 0 and "This was a dry-run" in log, log[-3000:]
    study = config["studies"]["mine"]
    grid = len(config["recipes"]["standard"]["lr"])
    finetune = planned_jobs(log).get("finetune", [])
    assert len(finetune) == len(study["models"]) * len(study["tasks"]) * grid, finetune
