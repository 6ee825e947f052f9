"""Reading the workflow imports no heavy library. Snakemake reads the Snakefile on every start,
a dry run included, and again in every SLURM job: whatever the Snakefile and workflow/rules/*.smk
import (and everything those modules import) is paid each time, so torch, transformers and
datasets (seconds) must never be among it, nor pandas, pyarrow, numpy or scipy. The modules are
read from the workflow's own import lines, so a new import is covered without editing this file;
a failure names the chain of imports that pulled the library in."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from workflow_helpers import REPO, copy_workflow, snakemake

ML = ("torch", "transformers", "datasets")
DATA = ("pandas", "pyarrow", "numpy", "scipy")
FROM = re.compile(r"^[ \t]*from[ \t]+(blurbflow[\w.]*)[ \t]+import\b", re.M)
IMPORT = re.compile(r"^[ \t]*import[ \t]+(blurbflow[^\n#;]*)", re.M)
IMPORT_ALL = "import json, sys\nfor m in sys.argv[1:]: __import__(m)\n"  # as `import m` does


def workflow_files() -> list:
    return [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]


def workflow_imports() -> list[str]:
    """Every blurbflow module the Snakefile and the rule files import (`from blurbflow.x import
    …` or `import blurbflow.x`, at any indentation: an import inside an `if` or a function
    runs while the workflow is read too)."""
    modules = set()
    for path in workflow_files():
        text = path.read_text()
        modules.update(FROM.findall(text))
        for names in IMPORT.findall(text):
            modules.update(name.split(" as ")[0].strip() for name in names.split(","))
    return sorted(m for m in modules if m.startswith("blurbflow"))


def import_chains(importtime: str, wanted) -> dict[str, str]:
    """`-X importtime` output → for each wanted module that was imported, the chain of imports
    that brought it in (`pandas <- blurbflow.data.parsers <- …`). Each line is printed when its
    import finishes, after the imports it made, indented one level deeper than its importer."""
    entries = []
    for line in importtime.splitlines():
        fields = line.split("|")
        if not line.startswith("import time:") or len(fields) != 3 or not fields[1].strip():
            continue
        if not fields[1].strip().isdigit():
            continue  # the header line
        name = fields[2].rstrip()
        entries.append((len(name) - len(name.lstrip()), name.strip()))
    chains = {}
    for i, (depth, name) in enumerate(entries):
        if name not in wanted or name in chains:
            continue
        chain = [name]
        for later_depth, later in entries[i + 1 :]:
            if later_depth < depth:
                chain.append(later)
                depth = later_depth
        chains[name] = " <- ".join(chain)
    return chains


@pytest.fixture(scope="module")
def loaded():
    """The workflow's modules imported in a fresh interpreter: (modules, sys.modules there,
    import chains of the heavy libraries)."""
    modules = workflow_imports()
    code = IMPORT_ALL + "print(json.dumps(sorted(sys.modules)))"
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *modules],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    present = set(json.loads(run.stdout.strip().splitlines()[-1]))
    return modules, present, import_chains(run.stderr, ML + DATA)


def test_the_workflow_imports_are_read_from_its_files(loaded):
    modules, _, _ = loaded
    assert {"blurbflow.config", "blurbflow.results.layout", "blurbflow.config.validate"} <= set(
        modules
    )
    assert "blurbflow.data.generate" in modules  # imported inside an `if` (common.smk)


def test_reading_the_workflow_imports_no_torch_transformers_or_datasets(loaded):
    _, present, chains = loaded
    heavy = [name for name in ML if name in present]
    assert not heavy, "\n".join(chains.get(name, name) for name in heavy)


def test_reading_the_workflow_imports_no_pandas_pyarrow_numpy_or_scipy(loaded):
    _, present, chains = loaded
    heavy = [name for name in DATA if name in present]
    assert not heavy, "\n".join(chains.get(name, name) for name in heavy)


# Written into the snakemake process (sitecustomize on PYTHONPATH): at exit, every module it
# imported, the workflow's own functions included (DAG building, resources, the dry run).
MODULES_AT_EXIT = """import atexit, os, sys
atexit.register(lambda: open(os.environ["MODULES_AT_EXIT"], "w").write("\\n".join(sys.modules)))
"""


@pytest.mark.slow  # runs snakemake
def test_a_dry_run_of_the_demo_imports_no_torch_transformers_or_datasets(tmp_path):
    """Beyond the import lines: what the workflow's functions import while the DAG is built
    (the demo generates its data, so check_generated runs too). Snakemake imports pandas
    itself (the SLURM plugin), so only the ML libraries are checked here."""
    workdir = copy_workflow(tmp_path / "wf")
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(MODULES_AT_EXIT)
    found = tmp_path / "modules.txt"
    env = {"PYTHONPATH": str(tmp_path / "hook"), "MODULES_AT_EXIT": str(found)}
    run = snakemake(workdir, "-n", "all", "--configfile", "config/demo.yaml", env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    modules = set(found.read_text().split())
    assert "blurbflow.config" in modules  # the hook saw the workflow being read
    assert not modules & set(ML), sorted(modules & set(ML))


def test_an_import_chain_is_named():
    importtime = "\n".join(
        [
            "import time: self [us] | cumulative | imported package",
            "import time:       5 |          5 |       numpy",
            "import time:       5 |         10 |     pandas",
            "import time:       5 |         15 |   blurbflow.data.parsers",
            "import time:       5 |         20 | blurbflow.data.generate",
        ]
    )
    assert import_chains(importtime, DATA) == {
        "numpy": "numpy <- pandas <- blurbflow.data.parsers <- blurbflow.data.generate",
        "pandas": "pandas <- blurbflow.data.parsers <- blurbflow.data.generate",
    }
