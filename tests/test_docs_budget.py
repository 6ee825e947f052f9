"""Less to read, nothing lost: the word budgets of the docs (counted as `wc -w` counts), the
README's terms defined before their use, a figure stated once (or generated), no issue numbers
readers cannot see, and the README's paper-config cost generated from `snakemake plan`. Each
check is shown failing on a planted example."""

from __future__ import annotations

import re

from docs_checks import (
    REPO,
    USER_DOCS,
    issue_numbers,
    read,
    repeated_figures,
    stated,
    words,
)
from paper_plan import paper_plan

from blurbflow.docgen.__main__ import README, readme_text
from blurbflow.docgen.paper_cost import cost_block

PAGES = read(USER_DOCS)
TOTAL = 30_000  # README, docs/*.md, config/README.md, benchmarks/README.md
BUDGETS = {
    "README.md": 2_000,
    "docs/concepts.md": 2_500,
    "docs/fidelity.md": 7_800,
    "docs/first-hour.md": 1_500,  # questions and their sections: read in minutes
}
# The README's terms, each defined (bold) or linked to the glossary where it is first used.
TERMS = {
    "cell": r"cells?",
    "job": r"jobs?",
    "recipe": r"recipes?",
    "study": r"study|studies",
    "hparams": r"hparams",
    "workflow profile": r"workflow profiles?",
    "candidate": r"candidates?",
    "identity": r"identity|identities",
    "stage version": r"stage versions?",
    "the demo config": r"demo config",
    "the paper config": r"paper config",
}
GLOSSARY = "docs/concepts.md"


def test_the_docs_keep_to_their_word_budgets():
    counts = {page: words(text) for page, text in PAGES.items()}
    over = {p: (counts[p], cap) for p, cap in BUDGETS.items() if counts[p] > cap}
    assert not over, f"pages over their budget (words, budget): {over}"
    assert sum(counts.values()) <= TOTAL, f"{sum(counts.values())} words > {TOTAL}: {counts}"


def undefined_before_use(text: str) -> list[str]:
    """Terms whose first use in the prose (code blocks out) is neither their definition
    (`**term**`) nor a link to the glossary."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    problems = []
    for term, pattern in TERMS.items():
        first = re.search(rf"(?<![\w/-]){pattern}(?![\w/-]|\.\w)", prose, re.I)  # not in paths
        if first is None:
            continue
        before, after = prose[: first.start()], prose[first.end() :]
        bold = re.search(r"\*\*[^*\n]*$", before) and re.match(r"[^*\n]*\*\*", after)
        link = re.search(r"\[[^\]]*$", before) and re.match(rf"[^\]]*\]\({GLOSSARY}", after)
        if not (bold or link):
            line = prose[: first.start()].count("\n") + 1
            problems.append(f"`{term}` used on line {line} before its definition")
    return problems


def test_the_readme_defines_each_term_before_it_uses_it():
    assert undefined_before_use(PAGES[README]) == []


def test_a_term_used_before_its_definition_is_caught():
    planted = "Each **cell** is a run of a job.\n\nA **job** …; a [recipe](docs/concepts.md)."
    assert undefined_before_use(planted) == ["`job` used on line 1 before its definition"]
    assert undefined_before_use("A [recipe](docs/concepts.md#x) and **recipe**") == []


def test_a_figure_is_stated_on_one_page_or_generated():
    assert repeated_figures(PAGES) == []


def test_a_figure_on_two_pages_is_caught():
    planted = {
        "README.md": "It has 39,405 cells.\n<!-- BEGIN x -->6,285 jobs<!-- END x -->\n",
        "docs/slurm.md": "39,405 cells in 6,285 jobs; 1,000 queued",  # a round limit: not a figure
        "docs/fidelity.md": "39,405 cells in 6,285 jobs",
        "docs/seeds.md": "1,000 seeds",
        "config/README.md": "6,285 jobs",  # generated pages are one place
    }
    assert repeated_figures(planted) == [
        "39,405 on README.md, docs/fidelity.md, docs/slurm.md",
        "6,285 on docs/fidelity.md, docs/slurm.md",
    ]


def test_the_docs_cite_no_issue_numbers():
    assert issue_numbers(PAGES) == []


def test_an_issue_number_is_caught_and_another_projects_link_is_not():
    planted = {
        "docs/seeds.md": "Issue 22. The plugin's [issue 473](https://github.com/o/r/issues/473)."
    }
    assert issue_numbers(planted) == ["docs/seeds.md: Issue 22"]


def test_the_readme_states_the_paper_configs_cost_from_the_plan():
    plan = paper_plan()
    assert (REPO / README).read_text() == readme_text(REPO, plan), (
        "README.md's paper-config cost is out of date: run `python -m blurbflow.docgen`"
    )
    block = re.search(r"<!-- BEGIN paper config cost.*?<!-- END", PAGES[README], re.S).group(0)
    queue = plan["remaining"]["queue"]
    for figure in (plan["cells"], plan["jobs"], queue["entries"]):
        assert f"**{figure:,}" in block
    assert "GPU-hours" in block and "39,405" not in stated(PAGES[README])
    # config.yaml names no GPU type: the prior is the RTX 3090's rate, and the line says so
    assert plan["prior_gpu"] == "rtx3090"
    assert "GPU-hours** at the RTX 3090's measured rate" in block


def test_the_cost_line_names_the_gpu_whose_rate_it_assumes():
    queue = {"entries": 3, "grouped": {}, "submissions": {}, "components": {}, "alone": 3}
    left = {"hours": 1234.0, "startup_hours": 1, "queue": queue}
    plan = {"cells": 9, "jobs": 3, "remaining": left}
    lines = {gpu: cost_block({**plan, "prior_gpu": gpu}) for gpu in ("h200", "a100", "rtx4090")}
    assert "**1,200 GPU-hours** at the H200's measured rate (" in lines["h200"]
    assert "at the A100's rate, scaled by peak from measured GPUs (" in lines["a100"]
    assert "at the RTX 4090's rate, scaled" in lines["rtx4090"]
