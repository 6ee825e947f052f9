"""The words a user meets, read from the code: statuses, file and folder names, result fields and
table columns, report headings, log lines, provenance rows, rules and commands. The reference
page (docs/reference.md) is generated from these lists, and tests/test_docs_concepts.py checks
that each one is defined there or in the glossary (docs/concepts.md)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "src" / "blurbflow"
TEMPLATES = PACKAGE / "report" / "templates"
PLACEHOLDER = re.compile(r"\{[^{}]*\}|<[\w ]+>")  # `{model}`, and `<model>` in help texts


def normal(word: str) -> str:
    """A word as compared: lower case, no backticks, any `{…}` as `{}`, no trailing `/` or `:`."""
    word = PLACEHOLDER.sub("{}", word.replace("`", "").strip().lower())
    return re.sub(r"\s+", " ", word).rstrip("/:").strip()


def statuses() -> set[str]:
    from blurbflow.record.schema import FINISHED, STATUSES
    from blurbflow.results.aggregate import REJECTED
    from blurbflow.results.power import LABELS
    from blurbflow.results.sequential import Outcome

    return {*STATUSES, *FINISHED, REJECTED.strip(": "), *LABELS, *(o.value for o in Outcome)}


PATH_LITERAL = (
    re.compile(r'"((?:results|resources)/[^"\n]*)"'),
    re.compile(r"'((?:results|resources)/[^'\n]*)'"),
)
FILE_NAME = re.compile(r"^[\w.{}-]*\.(json|jsonl|parquet|lock|pt|csv|md|tex|html|log|txt)$")
FILE_NAME_EXTS = re.compile(r"\.(safetensors|bin)$")
# Raw datasets' own file names (what upstream ships, under resources/raw/): not ours to define.
RAW_PACKAGES = ("data", "tasks", "qa", "metrics", "published", "docgen")
# Folder and marker names the code keeps as constants (module, attribute).
NAME_CONSTANTS = (
    ("blurbflow.record.earlier", "EARLIER"),
    ("blurbflow.train.kept", "MODEL_DIR"),
    ("blurbflow.models.archive", "FOLDER"),
    ("blurbflow.config.grid", "SELECTED"),
    ("blurbflow.cluster", "SHORT_GROUP"),
    ("blurbflow.models.candidate", "CANDIDATE"),
)


def _sources() -> list[Path]:
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow").rglob("*.smk"))]
    files += sorted((ROOT / "workflow" / "scripts").glob("*.py"))
    return files + sorted(p for p in PACKAGE.rglob("*.py") if "docgen" not in p.parts)


def path_templates() -> set[str]:
    """Every `results/…` and `resources/…` path the workflow and the library spell out."""
    found = set()
    for path in _sources():
        text = path.read_text()
        for pattern in PATH_LITERAL:
            found.update(pattern.findall(text))
    if importlib.util.find_spec("blurbflow.util.paths"):  # one module for every path template
        paths = importlib.import_module("blurbflow.util.paths")
        for value in vars(paths).values():
            if isinstance(value, str) and value.startswith(("results/", "resources/")):
                found.add(value)
    return found


def path_parts(templates) -> set[str]:
    """The names a user sees in those paths: each part that is not only placeholders."""
    parts = set()
    for template in templates:
        for part in re.sub(r"[\[\]]", "", PLACEHOLDER.sub("{}", template)).split("/"):
            if part and not re.fullmatch(r"[{}.\-_+]*", part):
                parts.add(part)
    return parts


def file_names() -> set[str]:
    """File-name literals of the modules that write what a user sees (not raw datasets')."""
    names = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in RAW_PACKAGES:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            value = node.value
            if not (FILE_NAME.match(value) or FILE_NAME_EXTS.search(value)):
                continue
            if re.search(r"[/*\\]", value):  # a path (above) or a pattern, not a name
                continue
            if "." in value.lstrip(".").rstrip("."):  # a name, not a bare extension
                names.add(value)
    for module, attribute in NAME_CONSTANTS:
        names.add(getattr(importlib.import_module(module), attribute))
    return names


def result_fields() -> list[str]:
    """result.json's fields, then the columns of cells.parquet that are not fields."""
    from blurbflow.record.schema import COLUMNS, Result

    fields = list(Result.__annotations__)
    return fields + [c for c in COLUMNS if c not in fields]


def cell_columns() -> list[str]:
    """The columns of cells.parquet (record/schema.py)."""
    from blurbflow.record.schema import COLUMNS

    return list(COLUMNS)


def table_columns() -> list[str]:
    """The columns of the comparisons and reproduction tables, in that order."""
    from blurbflow.results import comparisons, reproduction

    columns = list(comparisons.COLUMNS)
    return columns + [c for c in reproduction.COLUMNS if c not in columns]


def _template_text(text: str) -> str:
    """The words of a bit of template: jinja expressions and tags out, placeholders dropped."""
    text = re.sub(r"\{%.*?%\}", "", text)
    text = re.sub(r"\{\{.*?\}\}", "{}", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"\s+", " ", text.replace("{}", "")).strip(" :")
    text = re.sub(r"\(\s*", "(", re.sub(r"\s*\)", ")", text)).replace("()", "").strip()
    return re.sub(r"^\((.*)\)$", r"\1", text)  # `(chance …)` beside a task: chance


def report_words() -> list[str]:
    """Headings, column heads, cards and Methods paragraphs of the report's templates, in the
    order the report shows them."""
    words: dict[str, None] = {}
    for template in sorted(TEMPLATES.glob("*.j2"), key=lambda p: p.name != "report.html.j2"):
        text = template.read_text()
        found = re.finditer(
            r"<h[1-6][^>]*>(.*?)</h[1-6]>|<th[^>]*>(.*?)</th>|<li><b>([^<]+?)\.</b>"
            r'|<div class="card[^"]*"><b>.*?</b>(.*?)</div>',
            text,
            re.S,
        )
        for match in found:
            word = _template_text(next(g for g in match.groups() if g is not None))
            if word:
                words.setdefault(word)
    return list(words)


# a line printed, or an error's message (`raise JobLocked(f"…")`)
PRINTS = re.compile(r'(?:print|raise \w+)\(\s*f?"([^"]*)"')


def log_lines() -> dict[str, str]:
    """The lines a job, its lock and checkpoint, and the workflow print → the file printing it."""
    names = ("job.py", "seed_run.py", "concurrent.py", "lock.py", "checkpoint.py")
    files = [PACKAGE / "train" / name for name in names]
    files += [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]
    lines: dict[str, str] = {}
    for path in files:
        for line in PRINTS.findall(path.read_text()):
            line = line.rstrip("; :")  # a message continued on the next line
            if re.search(r"[a-z]{3}", PLACEHOLDER.sub("", line)):
                where = path.relative_to(PACKAGE if PACKAGE in path.parents else ROOT)
                lines.setdefault(line, str(where))
    return lines


def rules() -> list[str]:
    """Every rule and checkpoint of the workflow, in the order the rule files define them."""
    names: dict[str, None] = {}
    for path in [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]:
        for name in re.findall(r"^\s*(?:rule|checkpoint) (\w+)", path.read_text(), re.M):
            names.setdefault(name)
    return list(names)


def commands() -> list[str]:
    """Every `blurbflow` subcommand."""
    from blurbflow.cli import build_parser

    parser = build_parser()
    names: list[str] = []
    for action in parser._subparsers._group_actions:  # argparse keeps its subparsers there
        names.extend(action.choices)
    return names


def rules_and_commands() -> set[str]:
    return {*rules(), *commands()}


def provenance_rows() -> list[str]:
    """The report's provenance rows, with a package's name as `{}`."""
    import pandas as pd

    from blurbflow.report.render import _observed
    from blurbflow.util.provenance import REPORT_PACKAGES, collect_provenance

    columns = ["started", "finished", "device", "git_commit", "versions"]
    versions = '{"torch": "2.0"}'
    cells = pd.DataFrame([["2026", "2026", "cpu", "abc", versions]], columns=columns)
    rows = [*collect_provenance({}, "hash", cells), *(key for key, _ in _observed(cells))]
    packages = "|".join(map(re.escape, {*REPORT_PACKAGES, "torch"}))
    found: dict[str, None] = {}
    for row in rows:
        found.setdefault(re.sub(rf"(package |cells' )({packages})$", r"\1{}", row))
    return list(found)
