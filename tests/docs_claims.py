"""Checks that what the docs claim about the code is what the code does, as functions of texts so
that tests/test_docs_claims.py can plant a fault in each: columns of cells.parquet, commands the
code prints, the layout's files and rules, the stage versions, where a name is defined, the
verdicts' notes, terms defined before their use, and names with several meanings qualified.
Each returns its problems as lines naming the page and the fix."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from docs_checks import PACKAGE, REPO, stated

GLOSSARY = "concepts.md"


def sentences(text: str) -> list[str]:
    """A page's sentences, line breaks joined: one ends at `. `, `; `, a blank line, a list item
    or a table row."""
    paragraphs = re.split(r"\n\s*\n|\n(?=\s*(?:- |\|))", text)
    return [s for p in paragraphs for s in re.split(r"(?<=[.;])\s+", " ".join(p.split()))]


# -- columns ----------------------------------------------------------------------------------
def column_claims(pages: dict[str, str], fields: set[str], columns: set[str]) -> list[str]:
    """A sentence saying cells.parquet has (records, holds) a field that record/schema.py does not
    make a column: `fields`, result.json's fields; `columns`, cells.parquet's."""
    problems = []
    for page, text in pages.items():
        for sentence in sentences(stated(text)):
            if "cells.parquet" not in sentence or "result.json only" in sentence:
                continue
            named = set(re.findall(r"`(\w+)`", sentence)) & fields
            for name in sorted(named - columns):
                problems.append(f"{page}: `{name}` is no column of cells.parquet: {sentence[:90]}")
    return problems


# -- commands the code prints -------------------------------------------------------------------
def _words(command: str) -> list[str]:
    """A command's words, placeholders (`<…>`, `…`, `...`, `X`) as X."""
    command = re.sub(r"<[^<>]+>", "X", command)
    return ["X" if re.search(r"…|\.\.\.|\bX\b", w) else w for w in command.split()]


def _fits(doc: list[str], code: list[str]) -> bool:
    """Whether `doc` is `code` or a start of it, a placeholder (X) on either side standing for
    one or more words of the other that are not flags."""
    if not doc:
        return True
    if not code:
        return False
    if doc[0] == code[0]:
        return _fits(doc[1:], code[1:])
    if code[0] == "X":
        for n in range(1, len(doc) + 1):
            if doc[n - 1].startswith("--"):
                break
            if _fits(doc[n:], code[1:]):
                return True
    elif doc[0] == "X":
        for n in range(1, len(code) + 1):
            if code[n - 1].startswith("--"):
                break
            if _fits(doc[1:], code[n:]):
                return True
    return False


def unprinted_commands(pages: dict[str, str], printed: list[str]) -> list[str]:
    """A command the docs show with placeholders (`<folder>`, `…`) stands for one the code prints:
    it must be one of `printed` (the code's, fields as X) or the start of one."""
    problems = []
    tick = re.compile(r"`((?:\.venv/bin/)?(?:snakemake|blurbflow|python -m blurbflow) [^`]+)`")
    shapes = [_words(c) for c in printed]
    for page, text in pages.items():
        for command in (" ".join(c.split()) for c in tick.findall(text)):
            if not re.search(r"<[^<>]+>|…|\.\.\.", command):
                continue
            mine = _words(command.replace("python -m blurbflow", "blurbflow"))
            tool = mine[0].rsplit("/", 1)[-1]
            ok = any(_fits(mine[1:], s[1:]) for s in shapes if s[0].rsplit("/", 1)[-1] == tool)
            if not ok:
                problems.append(f"{page}: `{command}` is no command the code prints")
    return problems


# -- the code layout ----------------------------------------------------------------------------
def layout_problems(text: str, root: Path = REPO) -> list[str]:
    """engine.md's Layout block: each path exists, and the rule files and doc pages it lists are
    exactly those there are."""
    block = re.search(r"^## Layout\n\n((?:    .*\n|\n)+)", text, re.M)
    if block is None:
        return ["docs/engine.md: no Layout block"]
    entries: list[tuple[str, str]] = []
    for line in block.group(1).splitlines():
        if re.match(r" {5,}\S", line) and entries:  # the line before continues
            entries[-1] = (entries[-1][0], f"{entries[-1][1]} {line.strip()}")
        elif line.strip():
            head, said = (re.split(r"\s{2,}", line.strip(), maxsplit=1) + [""])[:2]
            entries.append((head, said))
    problems = []
    for head, said in entries:
        for path in re.split(r",\s*", head):
            if not list(root.glob(path.rstrip("/"))):
                problems.append(f"docs/engine.md Layout: {path}: no such path")
        listed = {re.sub(r"\s*\(.*?\)", "", w).strip() for w in said.split(":")[-1].split(",")}
        if head == "workflow/rules/*.smk":
            have = {p.stem for p in (root / "workflow" / "rules").glob("*.smk")}
        elif head == "docs/":
            have = {p.stem for p in (root / "docs").glob("*.md")}
        else:
            continue
        if missing := sorted(have - listed):
            problems.append(f"docs/engine.md Layout: {head} leaves out {', '.join(missing)}")
        if extra := sorted(listed - have):
            problems.append(f"docs/engine.md Layout: {head} names {', '.join(extra)}: no such file")
    return sorted(problems)


# -- stage versions -----------------------------------------------------------------------------
def stage_numbers(source: str) -> list[str]:
    """The stage versions a module declares: its upper-case numbers and mappings of numbers."""
    import ast

    names = []
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id.isupper() and target.id != "FIRST":
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, int):
                names.append(target.id)
            elif isinstance(value, ast.Dict):
                names.append(target.id)
    return names


def stage_version_problems(text: str, numbers: list[str]) -> list[str]:
    """extending.md's "Changing what a stage writes" must name each stage version."""
    section = re.search(r"^## Changing what a stage writes\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    said = section.group(1) if section else ""
    return [
        f"docs/extending.md: `{name}` (stage_versions.py) is not named under "
        '"Changing what a stage writes"'
        for name in numbers
        if not re.search(rf"`{name}(\[|`)", said)
    ]


# -- where a name is defined --------------------------------------------------------------------
def misplaced_names(pages: dict[str, str]) -> list[str]:
    """`` `path.py` `Name` ``: Name must be defined in that file (not only imported there)."""
    problems = []
    for page, text in pages.items():
        for path, name in re.findall(r"`((?:[\w]+/)*\w+\.py)` `(\w+)`", text):
            found = [p for p in (REPO / path, PACKAGE / path) if p.is_file()]
            if not found:
                continue
            source = found[0].read_text()
            if not re.search(rf"^(?:class |def ){name}\b|^{name}\s*[:=]", source, re.M):
                problems.append(f"{page}: `{name}` is not defined in `{path}`")
    return problems


# -- paths a run writes -------------------------------------------------------------------------
# a placeholder the docs write → the code's names it may stand for
ALIASES = {"n": {"seed", "n"}, "k": {"round"}, "csv,md,tex": {"ext"}, "tune_fold": {"task"}}


def _tokens(path: str) -> list[str]:
    """A path's characters, each placeholder one token (`{name}`, normalized) and `…` one."""
    tokens: list[str] = []
    for part in re.split(r"(\{[^{}]*\}|…|\.\.\.)", path.rstrip("/")):
        if part.startswith("{"):
            tokens.append("{" + part[1:-1].strip().lower().replace(" ", "_") + "}")
        elif part in ("…", "..."):
            tokens.append("…")
        else:
            tokens.extend(part)
    return tokens


def _fits_path(doc: list[str], code: list[str]) -> bool:
    """`doc` is `code`, or a folder of it, or a file below it: a code placeholder takes one or more
    characters of one part, or the doc's placeholder of the same name (ALIASES); `…` any parts."""

    @functools.cache
    def fits(i: int, j: int) -> bool:
        if i == len(doc):
            return j == len(code) or code[j] == "/"
        if j == len(code):
            return doc[i] == "/"  # a file or folder below the code's folder
        d, c = doc[i], code[j]
        if d == "…":
            return any(fits(i + 1, k) for k in range(j + 1, len(code) + 1))
        if d.startswith("{"):
            names = ALIASES.get(d[1:-1], {d[1:-1]})
            return c.startswith("{") and c[1:-1] in names and fits(i + 1, j + 1)
        if c.startswith("{"):  # a value for the code's placeholder: characters up to a `/`
            return d != "/" and (fits(i + 1, j + 1) or fits(i + 1, j))
        return d == c and fits(i + 1, j + 1)

    return fits(0, 0)


def _written(path: str, templates: list[str]) -> bool:
    """Whether `path` is a path the code writes (a file, a folder of one, or below a folder)."""
    return any(_fits_path(_tokens(path), _tokens(t)) for t in templates)


def unwritten_paths(pages: dict[str, str], templates: list[str]) -> list[str]:
    """Every `results/…` and `resources/…` path the docs name is one the code writes
    (blurbflow.docgen.terms.path_templates), and so is each path a reference entry's meaning
    gives below its folder (`- **`results/selection/`**: … (`{model}/{task}/{recipe}.json`)`)."""
    problems = []
    top = r"(?:results|resources)/"
    for page, text in pages.items():
        named = re.findall(rf"`({top}[^`\s]*)`", text)
        for folder, meaning in re.findall(rf"^- \*\*`({top}[^`]*/)`\*\*: (.*)$", text, re.M):
            inner = re.findall(r"`([^`\s/]+/[^`\s]*)`", meaning)
            named += [folder + p for p in inner if not re.match(top, p)]
        for path in dict.fromkeys(named):
            if not path.endswith(".py") and not _written(path, templates):
                problems.append(f"{page}: `{path}` is no path the code writes")
    return problems
