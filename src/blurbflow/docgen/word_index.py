"""docs/reference.md: every file, field, column, log line, report heading, provenance row, rule
and command a user meets, as lists. The words of each section come from the code
(blurbflow.docgen.terms), in the code's order; their meanings from docgen/reference.yaml. A word
the code uses without a meaning, or a meaning for a word the code no longer uses, is an error."""

from __future__ import annotations

from pathlib import Path

import yaml

from blurbflow.docgen import terms
from blurbflow.docgen.options import COMMAND

MEANINGS = Path(__file__).with_name("reference.yaml")
PAGE = "docs/reference.md"
HEADER = f"""\
# Reference: files, fields, logs, report

<!-- generated from the code and src/blurbflow/docgen/reference.yaml by `{COMMAND}`;
edit those, not this file (tests/test_docs_concepts.py) -->

Every name a run writes or prints, listed from the code. The words these lines use (cell, job,
[dev](concepts.md#the-run), [manifest](concepts.md#statuses-and-states),
[input key](concepts.md#the-run), …) are defined in the glossary, [concepts.md](concepts.md);
config keys in [config/README.md](../config/README.md).
"""


class MissingMeaning(ValueError):
    pass


def entries(section: dict) -> list[tuple[list[str], str]]:
    """(names, meaning) of a section of reference.yaml."""
    found = []
    for item in section["entries"]:
        if isinstance(item, list):
            names, meaning = item
            found.append(([str(n) for n in names], str(meaning)))
        else:
            ((name, meaning),) = item.items()
            found.append(([str(name)], str(meaning)))
    return found


def _code_words(section: dict) -> list[str] | None:
    if "code" not in section:
        return None
    words = getattr(terms, section["code"])()
    return list(words)


def _line(names: list[str], meaning: str, where: str = "", plain: bool = False, mark="") -> str:
    shown = ", ".join(f"**{n}**" if plain else f"**`{n}`**" for n in names)
    return f"- {shown}{mark}: {meaning}{f' (`{where}`)' if where else ''}"


def _mark(names: list[str], marked: set[str] | None, word: str) -> str:
    """` (column)` when every name is in `marked`; an entry mixing both is an error."""
    if not marked:
        return ""
    inside = [terms.normal(n) in marked for n in names]
    if any(inside) and not all(inside):
        raise MissingMeaning(f"{MEANINGS.name}: {names}: split them, some are a {word}, some not")
    return f" ({word}{'s' if len(names) > 1 else ''})" if all(inside) else ""


def _ordered(key: str, section: dict) -> list[str]:
    """The section's lines: in the code's order when the code lists its words."""
    pairs = entries(section)
    code = _code_words(section)
    plain = section.get("plain", False)  # headings of the report, not names to type
    if code is None:
        return [_line(names, meaning, plain=plain) for names, meaning in pairs]
    by_word = {terms.normal(n): i for i, (names, _) in enumerate(pairs) for n in names}
    missing = [w for w in code if terms.normal(w) not in by_word]
    if missing:
        raise MissingMeaning(
            f"{MEANINGS.name}: `{key}` has no meaning for {missing}: add them there and run "
            f"`{COMMAND}`"
        )
    known = {terms.normal(w) for w in code}
    stale = [n for names, _ in pairs for n in names if terms.normal(n) not in known]
    if stale:
        raise MissingMeaning(
            f"{MEANINGS.name}: `{key}` names {stale}, which the code no longer has"
        )
    sources = getattr(terms, section["code"])() if key == "log lines" else {}
    where = {terms.normal(line): path for line, path in dict(sources).items()}
    # `mark: {code: …, word: …}`: the names a code list holds get `(word)` (columns of a field)
    mark = section.get("mark") or {}
    marked = {terms.normal(w) for w in getattr(terms, mark["code"])()} if mark else None
    lines, done = [], set()
    for word in code:
        index = by_word[terms.normal(word)]
        if index not in done:
            done.add(index)
            names, meaning = pairs[index]
            shown = _mark(names, marked, mark.get("word", ""))
            lines.append(_line(names, meaning, where.get(terms.normal(word), ""), plain, shown))
    return lines


def page(meanings: dict | None = None) -> str:
    meanings = yaml.safe_load(MEANINGS.read_text()) if meanings is None else meanings
    out = [HEADER]
    for key, section in meanings.items():
        out.append(f"## {section['title']}\n")
        if section.get("intro"):
            out.append(section["intro"] + "\n")
        out.append("\n".join(_ordered(key, section)) + "\n")
    return "\n".join(out)
