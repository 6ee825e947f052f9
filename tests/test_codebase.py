"""What the codebase promises its readers (docs/concepts.md): small modules, a short cell, and
docs that live in the repository, not in a design document that does not ship with it."""

from __future__ import annotations

import inspect
import re

from blurbflow.train.cell import train_cell

from workflow_helpers import REPO

MAX_MODULE_LINES = 300


def test_no_module_under_src_is_over_300_lines():
    long = {
        str(path.relative_to(REPO)): n
        for path in (REPO / "src").rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split these modules (one thing a module): {long}"


def test_train_cell_is_at_most_60_lines():
    assert len(inspect.getsource(train_cell).splitlines()) <= 60


def test_no_code_points_at_a_design_document_outside_the_repository():
    cited = [
        f"{path.relative_to(REPO)}:{number}"
        for folder in ("src", "workflow")
        for path in (REPO / folder).rglob("*")
        if path.is_file() and path.suffix in (".py", ".smk", ".yaml", ".html", "")
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if re.search(r"\bDESIGN\b", line)
    ]
    assert not cited, f"cite docs/ instead: {cited}"
