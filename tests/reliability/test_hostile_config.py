"""Hostile and careless configs, each planted into a copy of the workflow and run through
snakemake: every one stops before any job with an error naming the key, and leaves the tree as
it was (nothing written, moved or deleted anywhere under the test's folder, no command run).

The workflow copy sits two folders deep (`outer/mid/workflow`) with files planted in its
`results/` and `resources/` and beside it, so an escape (`../../../ESCAPED`) or a deletion
(a built model named `..` once made Snakemake remove `resources/`) would show in the snapshot.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import yaml

from workflow_helpers import REPO, copy_workflow, cut_published, planned_jobs, snakemake

DEMO = yaml.safe_load((REPO / "config/demo.yaml").read_text())
NAME_RULE = "names become folders and command arguments, so use letters, digits"


def _rename(section: str, old: str, new: str, **spec):
    """Rename `section.old` to `new` with every reference to it (a model also gets `spec`)."""

    def edit(config):
        config[section][new] = {**(config[section].pop(old) or {}), **spec}
        for study in config["studies"].values():
            if section in ("models", "recipes"):
                study[section] = [new if item == old else item for item in study[section]]
            if study.get("baseline") == old:
                study["baseline"] = new

    return edit


def _set(*keys, value):
    def edit(config):
        node = config
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value

    return edit


# fault id → (edit of the demo config, texts the error must hold, real run instead of -n)
FAULTS = {
    "recipe-with-slash": (
        _rename("recipes", "layer-specific", "tinn/llrd-0.8"),
        ["recipes: the name 'tinn/llrd-0.8' is not allowed", NAME_RULE],
        False,
    ),
    "recipe-dotdot": (
        _rename("recipes", "layer-specific", ".."),
        ["recipes: the name '..' is not allowed", NAME_RULE],
        False,
    ),
    "study-escaping": (
        _rename("studies", "demo", "../../../ESCAPED"),
        ["studies: the name '../../../ESCAPED' is not allowed", NAME_RULE],
        False,
    ),
    "model-dotdot-built": (
        _rename("models", "tiny-biobert", "..", path="resources/models/..", build="demo"),
        ["models: the name '..' is not allowed", NAME_RULE],
        True,
    ),
    "model-built-over-resources": (
        _set("models", "tiny-biobert", "path", value="resources"),
        [
            "models.tiny-biobert.path: 'resources': a model with `build: demo` is built into "
            "resources/models/tiny-biobert/",
            "set `path: resources/models/tiny-biobert`",
        ],
        True,
    ),
    "engine-compile-backend-typo": (
        _set("engine", "compile", value="inductr"),
        ["engine.compile: 'inductr' is no torch.compile backend", "inductor, cudagraphs"],
        False,
    ),
    "engine-gpu-unknown": (
        _set("engine", "gpu", value="z999"),
        ["engine.gpu: 'z999' is no GPU type the plan knows", "h100, h200"],
        False,
    ),
    "model-running-a-command": (
        _rename("models", "tiny-biobert", "m$(touch PWNED)", path="resources/models/m"),
        ["models: the name 'm$(touch PWNED)' is not allowed", NAME_RULE],
        True,
    ),
    "recipe-with-spaces-and-accents": (
        _rename("recipes", "layer-specific", "my recipé ü"),
        ["recipes: the name 'my recipé ü' is not allowed", NAME_RULE],
        False,
    ),
    "epochs-task-typo": (
        _set("recipes", "standard", "epochs", value={"default": 4, "biosess": 20}),
        ["recipes.standard.epochs.biosess: unknown task 'biosess' (did you mean 'biosses'?)"],
        False,
    ),
    "corpus-task-typo": (
        _set("models", "tiny-biobert", "corpus_tasks", value=["ncbidisease", "gda"]),
        ["models.tiny-biobert.corpus_tasks: unknown task 'gda' (did you mean 'gad'?)"],
        True,
    ),
    "nan-lr": (
        _set("recipes", "standard", "lr", value=math.nan),
        ["recipes.standard.lr: nan is not a finite number"],
        False,
    ),
    "nan-warmup": (
        _set("recipes", "layer-specific", "warmup_ratio", value=math.nan),
        ["recipes.layer-specific.warmup_ratio: nan is not a finite number"],
        False,
    ),
    "huge-seed-count": (
        _set("studies", "demo", "seeds", value=100_000_000),
        ["studies.demo.seeds: 100000000 is greater than the maximum of 1000"],
        False,
    ),
    "grid-points-merging": (
        _set("recipes", "standard", "lr", value=[1e-3, 1.0000001e-3]),
        [
            "recipes.standard: two grid points (lr=0.001 vs lr=0.0010000001) both go to the "
            "folder 'lr0.001-bs16'"
        ],
        False,
    ),
    "hf-cache-escaping": (
        _set("hf_cache", value="../../../hf-cache"),
        ["hf_cache: '../../../hf-cache' leaves or replaces the workflow folder"],
        False,
    ),
    "missing-local-model": (
        _rename("models", "tiny-biobert", "local", path="/nonexistent/model", build=None),
        [
            "models.local.path: folder '/nonexistent/model' does not exist",
            "`snakemake prefetch` only fetches hub models",
        ],
        False,
    ),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    workdir = copy_workflow(root / "outer" / "mid" / "workflow")
    for planted in ("results/keep.txt", "resources/models/keep.txt", "../beside.txt"):
        (workdir / planted).parent.mkdir(parents=True, exist_ok=True)
        (workdir / planted).write_text("planted before the run\n")
    return workdir


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every folder, and every file with its size and mtime, under `root` (but Snakemake's own
    `.snakemake/` bookkeeping, whose creation is also all that changes a folder's mtime)."""
    return {
        str(path.relative_to(root)): None
        if path.is_dir()
        else (path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
        if ".snakemake" not in path.relative_to(root).parts
    }


def _plant(workdir: Path, name: str, edit) -> str:
    config = copy.deepcopy(DEMO)
    edit(config)
    for study in config["studies"].values():  # stand-in values of what the edit renamed
        cut_published(study)
    config["models"] = {
        model: {k: v for k, v in spec.items() if v is not None}
        for model, spec in config["models"].items()
    }
    (workdir / "config" / f"{name}.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    return f"config/{name}.yaml"


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.slow  # runs snakemake or trains for long; `make test-fast` leaves it out
def test_hostile_config_stops_before_any_job_and_leaves_the_tree_untouched(workdir, fault):
    edit, expected, real = FAULTS[fault]
    configfile = _plant(workdir, fault, edit)
    root = workdir.parents[2]
    before = _snapshot(root)

    args = ("--cores", "1", "all") if real else ("-n", "all")
    run = snakemake(workdir, *args, "--configfile", configfile, timeout=300)

    output = run.stdout + run.stderr
    assert run.returncode != 0, output[-3000:]
    assert "Invalid configuration: " in output, output[-3000:]
    for text in expected:
        assert text in output, output[-3000:]
    assert "Job stats" not in output and not planned_jobs(run.stdout)  # no job planned
    assert _snapshot(root) == before  # nothing appeared, changed or disappeared
    for place in (root, REPO, Path.home(), Path.cwd()):
        assert not (place / "PWNED").exists()
    assert not list(root.rglob("PWNED")) and not list(root.parent.glob("*ESCAPED*"))


@pytest.mark.slow  # runs snakemake or trains for long; `make test-fast` leaves it out
def test_control_a_safe_dotted_name_plans_its_own_folders(workdir):
    """The harness can pass: `tinn-llrd-0.8` is a valid name and plans every job under it."""
    configfile = _plant(workdir, "control", _rename("recipes", "layer-specific", "tinn-llrd-0.8"))
    before = _snapshot(workdir.parents[2])

    run = snakemake(workdir, "-n", "all", "--configfile", configfile, timeout=300)

    assert run.returncode == 0, run.stderr[-3000:]
    finetune = planned_jobs(run.stdout)["finetune"]
    assert len(finetune) == 10
    assert sum("/tinn-llrd-0.8/lr0.001-bs16/seeds.json" in out for out in finetune) == 5
    assert _snapshot(workdir.parents[2]) == before
