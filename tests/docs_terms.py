"""Checks of the docs' words, as functions of texts so that tests/test_docs_claims.py can plant a
fault in each: each verdict's notes as the code writes them, terms defined (or linked to the
glossary) before their first use on every page, and the names that mean several things
qualified wherever they are used."""

from __future__ import annotations

import re

from docs_checks import stated

# A term → its pattern: each page's first use is its definition (**term**) or a link to the
# glossary; on the glossary, its definition.
TERMS = {
    "dev": r"dev",
    "power": r"power",
    "verdict": r"verdicts?",
    "input key": r"input keys?",
    "manifest": r"manifests?",
    "technique key": r"technique keys?",
    "printed_only": r"printed_only",
}
GLOSSARY = "concepts.md"


def prose(text: str) -> str:
    """A page's prose: fenced and indented code blocks and headings blanked (positions kept)."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731 (positions kept)
    text = re.sub(r"^```.*?^```", blank, text, flags=re.M | re.S)
    return re.sub(r"^(?: {4,}\S|#).*$", blank, text, flags=re.M)


def first_use_problems(pages: dict[str, str], terms: dict[str, str] = TERMS) -> list[str]:
    """Each term's first use on each page: bold (its definition) or inside a link to the glossary
    (`[dev](concepts.md#the-run)`); not in a path or placeholder (`{input key}`)."""
    problems = []
    for page, text in pages.items():
        body = prose(text)
        for term, pattern in terms.items():
            first = re.search(rf"(?<![\w/{{,+.-]){pattern}(?![\w/}}-]|\.\w)", body, re.I)
            if first is None:
                continue
            before, after = body[: first.start()], body[first.end() :]
            bold = re.search(r"\*\*[^*\n]*$", before) and re.match(r"[^*\n]*\*\*", after)
            link = re.search(r"\[[^\]]*$", before) and re.match(
                rf"[^\]]*\]\([^)]*{GLOSSARY}", after
            )
            if not (bold or link):
                line = before.count("\n") + 1
                problems.append(
                    f"{page}:{line}: `{term}` before its definition: link its first use to the "
                    f"glossary ({GLOSSARY})"
                )
    return problems


# -- names with several meanings ----------------------------------------------------------------
# name → the words that, just before it, say which one is meant (`select: common_epoch` says it
# by its value: only the bare name is checked)
SEVERAL = {
    "select": r"recipe|study|export",
    "eval_batch_size": r"recipe|engine",
    "delta": r"study|adaptive|reproduction|comparison|column|±",
}
# a word of prose → the words that, just before it, say which one is meant
WORDS = {"checkpoints?": r"training|snakemake|model|fairseq"}


def unqualified(pages: dict[str, str], several: dict = SEVERAL) -> list[str]:
    """A name of several meanings used bare (`` `select` ``): the words just before it must say
    which (recipe `select`, the study's `delta`), unless it is being defined (`**`name`**`, a
    list item's lead)."""
    problems = []
    for page, text in pages.items():
        text = stated(text)
        for name, words in several.items():
            for found in re.finditer(rf"`{name}`", text):
                before = text[max(0, found.start() - 40) : found.start()]
                defined = re.search(r"(\*\*|(^|\n)\s*- )$", before)
                if defined or re.search(rf"\b({words})", before, re.I):
                    continue
                line = text[: found.start()].count("\n") + 1
                problems.append(f"{page}:{line}: `{name}` alone: say which ({words})")
    return problems


def unqualified_words(pages: dict[str, str], words: dict = WORDS) -> list[str]:
    """A word of several meanings in prose (not in backticks, not its definition) says which:
    a training checkpoint, a Snakemake checkpoint, a model checkpoint."""
    problems = []
    for page, text in pages.items():
        text = re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), stated(text))
        for word, qualifiers in words.items():
            for found in re.finditer(rf"(?<![\w*]){word}(?![\w*])", text, re.I):
                before = text[max(0, found.start() - 30) : found.start()]
                if not re.search(rf"\b({qualifiers})\b", before, re.I):
                    line = text[: found.start()].count("\n") + 1
                    problems.append(f"{page}:{line}: {found.group(0)!r} alone: say which")
    return problems


def glossary_homonyms(text: str, names: list[str]) -> list[str]:
    """The glossary's "Same word, different things" list names each of `names`."""
    section = re.search(r"^## Same word, different things\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if section is None:
        return ['docs/concepts.md: no section "Same word, different things"']
    leads = " ".join(re.findall(r"^- \*\*(.+?)\*\*", section.group(1), re.M))
    return [f"docs/concepts.md: {n!r} not in that list" for n in names if n not in leads]


# -- verdicts -----------------------------------------------------------------------------------
def verdict_problems(text: str, cases: list[tuple[str | None, str]]) -> list[str]:
    """results.md's "The verdict": each (verdict, note) the code writes for an entry is said
    under that verdict (None: **not comparable**), its note quoted (`{statistic}` for a
    statistic's name)."""
    section = re.search(r"^### The verdict\n(.*?)(?=^#)", text, re.M | re.S)
    items = re.findall(
        r"^- \*\*(.+?)\*\*(.*?)(?=^- |^\S|\Z)", section.group(1) if section else "", re.M | re.S
    )
    said = {name: body for name, body in items}
    problems = []
    for verdict, note in cases:
        name = verdict or "not comparable"
        quoted = [" ".join(q.split()) for q in re.findall(r"`([^`]+)`", said.get(name, ""))]
        shapes = [re.escape(q).replace(r"\{statistic\}", r"\w+") for q in quoted]
        head = note.split(": ")[0]
        if not any(re.fullmatch(s, note) or re.fullmatch(s, head) for s in shapes):
            problems.append(f'docs/results.md "The verdict": **{name}** does not quote `{head}`')
    return problems
