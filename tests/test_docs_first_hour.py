"""docs/first-hour.md: each question a new user asks first on exactly one line, pointing to the
one section that answers it; every link of the page lands on a heading; the README's reading
table leads with it. Its word cap is in tests/test_docs_budget.py. Each check is shown failing
on a planted example."""

from __future__ import annotations

import re

from docs_checks import USER_DOCS, broken_links, read

PAGE = "docs/first-hour.md"
PAGES = read(USER_DOCS)
# The questions asked first, by the bold lead-in of their line.
TOPICS = [
    "Score a model",
    "Selection",
    "Debug a cell",
    "Add an option",
    "What re-runs",
    "GPU-hours",
    "The verdict",
    "Arrays and rate limits",
    "Where scores live",
    "Adaptive seeds",
    "GPU defaults",
    "The paper's number",
]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def question_problems(text: str, topics: list[str]) -> list[str]:
    """Under "## Questions": one line per topic (`- **Topic**: question? [link](page#anchor)`),
    each with exactly one link, to a section; nothing else but blank lines."""
    part = re.search(r"^## Questions\n(.*?)(?=^#|\Z)", text, re.M | re.S)
    if part is None:
        return ["no section `## Questions`"]
    problems, seen = [], []
    for line in part.group(1).splitlines():
        lead = re.match(r"- \*\*(.+?)\*\*: ", line)
        if lead is None:
            if line.strip():
                problems.append(f"not a question line (one line each): {line.strip()[:60]}")
            continue
        topic, links = lead.group(1), LINK.findall(line)
        seen.append(topic)
        if topic not in topics:
            problems.append(f"{topic}: no such question; the questions are {topics}")
        if len(links) != 1:
            problems.append(f"{topic}: {len(links)} links; one section answers it")
        pages = [link for link in links if "#" not in link]
        problems += [f"{topic}: {link} is a page, not a section" for link in pages]
    for topic in topics:
        if seen.count(topic) != 1:
            problems.append(f"{topic}: on {seen.count(topic)} lines, not one")
    return problems


def section_links_problems(page: str, text: str) -> list[str]:
    """Every link of the page names a heading that exists (broken_links checks the anchor)."""
    problems = [f"{page}: {t} is a page, not a section" for t in LINK.findall(text) if "#" not in t]
    return problems + broken_links({page: text}, known=PAGES)


def test_each_first_question_has_one_line_and_one_section():
    assert question_problems(PAGES[PAGE], TOPICS) == []


def test_every_link_of_the_page_lands_on_a_heading():
    assert section_links_problems(PAGE, PAGES[PAGE]) == []


def test_the_readmes_reading_table_leads_with_the_page():
    table = re.search(r"^\| to… \| read \|\n\|---\|---\|\n(.*)$", PAGES["README.md"], re.M)
    assert table and "](docs/first-hour.md)" in table.group(1), "README's first reading row"


def test_a_missing_doubled_or_unanchored_question_is_caught():
    planted = (
        "# X\n\n## Questions\n\n"
        "- **Selection**: how? [a](concepts.md#selection)\n"
        "- **Selection**: again? [a](concepts.md#selection)\n"
        "- **Debug a cell**: how? [a](troubleshooting.md) [b](reference.md#logs)\n"
        "- **Colour**: which? [a](results.md#tables)\n"
        "  wrapped onto a second line\n\n## Other\n"
    )
    assert question_problems(planted, ["Selection", "Debug a cell", "GPU-hours"]) == [
        "Debug a cell: 2 links; one section answers it",
        "Debug a cell: troubleshooting.md is a page, not a section",
        "Colour: no such question; the questions are ['Selection', 'Debug a cell', 'GPU-hours']",
        "not a question line (one line each): wrapped onto a second line",
        "Selection: on 2 lines, not one",
        "GPU-hours: on 0 lines, not one",
    ]
    assert question_problems("# X\n", TOPICS) == ["no section `## Questions`"]


def test_a_link_to_a_page_or_a_gone_heading_is_caught():
    planted = "[a](slurm.md) [b](seeds.md#no-such-heading) [c](seeds.md#in-the-workflow)"
    assert section_links_problems(PAGE, planted) == [
        f"{PAGE}: slurm.md is a page, not a section",
        f"{PAGE}: link to seeds.md#no-such-heading: no heading #no-such-heading there",
    ]
