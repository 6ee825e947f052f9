"""The import contracts of pyproject.toml ([tool.importlinter], checked by `make lint`): each one
catches what it forbids. A copy of src/ gets one bad import, and `lint-imports` run on the copy
with the project's own contracts must fail, naming the broken contract and the import. Also the
one circle import-linter cannot see: through a package's __init__."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from workflow_helpers import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CONTRACTS = {
    c["id"]: c["name"]
    for c in tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
}


def lint_with(tmp_path: Path, module: str, line: str) -> tuple[int, str]:
    """lint-imports on a copy of src/ whose `module` (a path under src/) ends with `line`; its
    exit code and its output with the lines joined (rich wraps long contract names)."""
    shutil.copytree(REPO / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(tmp_path / "src" / module, "a") as handle:
        handle.write(f"\n{line}\n")
    run = subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tmp_path / "pyproject.toml"), "--no-cache"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "src")},  # the copy, not the checkout
        capture_output=True,
        text=True,
        timeout=60,
    )
    return run.returncode, " ".join((run.stdout + run.stderr).split())


@pytest.mark.parametrize(
    "contract, module, line, reported",
    [
        (  # the bottom of the task layer importing the workflow steps (the top)
            "layers",
            "blurbflow/tasks/spec.py",
            "import blurbflow.steps",
            "blurbflow.tasks is not allowed to import blurbflow.steps",
        ),
        (  # two modules of one package importing each other (decode imports windows)
            "acyclic",
            "blurbflow/qa/windows.py",
            "import blurbflow.qa.decode",
            "No cycles are allowed in blurbflow.qa.",
        ),
        (  # the task registry importing torch (the Snakefile reads it on every start)
            "no-torch",
            "blurbflow/tasks/types.py",
            "import torch",
            "blurbflow.tasks is not allowed to import torch",
        ),
    ],
)
def test_a_forbidden_import_breaks_its_contract(tmp_path, contract, module, line, reported):
    assert LINT_IMPORTS.is_file(), "make setup installs import-linter (the dev extra)"
    code, output = lint_with(tmp_path, module, line)
    assert code != 0, output
    assert f"{CONTRACTS[contract]} BROKEN" in output, output
    assert reported in output, output


# What import-linter cannot see: `from blurbflow.tasks import builtin` inside blurbflow.tasks.*
# runs blurbflow/tasks/__init__.py first, which may import the importer back (grimp records only
# blurbflow.tasks.builtin). Here `from P import name` imports P as well.


def package_imports(src: Path) -> dict[str, set[str]]:
    """module -> the modules of the package it imports (inside functions too)."""
    files = {}
    for path in src.rglob("*.py"):
        parts = path.relative_to(src).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    imports = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                name = node.module
                if node.level:  # relative: from the package, or from its parents
                    base = package.rsplit(".", node.level - 1)[0]
                    name = f"{base}.{node.module}" if node.module else base
                found |= {name} | {f"{name}.{alias.name}" for alias in node.names}
        imports[module] = {m for m in found if m in files and m != module}
    return imports


def circle_through(module: str, imports: dict[str, set[str]]) -> list[str] | None:
    """A shortest import circle from `module` back to itself, or None."""
    came_from: dict[str, str] = {}
    queue = [module]
    while queue:
        current = queue.pop(0)
        for imported in sorted(imports[current]):
            if imported == module:
                chain = [current]
                while chain[-1] != module:
                    chain.append(came_from[chain[-1]])
                return [*reversed(chain), module]
            if imported not in came_from:
                came_from[imported] = current
                queue.append(imported)
    return None


def test_no_import_circle_even_through_a_package_init():
    imports = package_imports(REPO / "src")
    circles = [c for m in sorted(imports) if (c := circle_through(m, imports))]
    assert not circles, "\n".join(" -> ".join(c) for c in circles)
