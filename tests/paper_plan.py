"""`snakemake plan` of the paper config (config.yaml) in a fresh clone, made once per test
session: the README's generated cost (tests/test_docs_budget.py) and the fidelity map's cell
counts (tests/test_paper_config.py) read the same plan."""

from __future__ import annotations

import functools
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@functools.cache
def paper_plan() -> dict:
    from blurbflow.docgen.paper_cost import paper_plan as plan

    return plan(REPO)
