"""Every word a user meets is defined: in the glossary, docs/concepts.md, or in the reference
page docs/reference.md, which `python -m blurbflow.docgen` generates from the code (the word
lists of blurbflow.docgen.terms) and the meanings in src/blurbflow/docgen/reference.yaml. And
docs/extending.md names files and tests that exist.

The word lists come from the code, not from a list kept here (blurbflow.docgen.terms):
- statuses: the record schema's, aggregation's `rejected`, the power labels, adaptive outcomes;
- file and folder names: every `results/…` and `resources/…` path the workflow and the library
  spell out (and `blurbflow.util.paths`' templates), and the file-name literals of the modules that
  write what a user sees (raw datasets' own names left out);
- the fields of result.json and columns of cells.parquet (`record/schema.py`), of the
  comparisons and reproduction CSVs (their modules' `COLUMNS`);
- the report's headings, column heads, cards and Methods paragraphs (its templates) and its
  provenance rows;
- the lines a job, its lock and checkpoint and the workflow print (their `print` calls);
- every rule and target of the workflow and every `blurbflow` subcommand (`cli.build_parser`);
- the schema's top-level, study and model keys (named in the glossary);
- e2e: every name in a finished demo's results/ and resources/ tree.

A word counts as defined when it is an entry of either page: the bold words that start a list
item (`- **word**: …`), or the first cell of a table row (several backticked names there are
split at commas; a path defines each of its parts). `{…}` placeholders match any placeholder.
The selection table must name each hyperparameter-choice mechanism with when it is decided,
what it writes, its module and what is refused."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from pathlib import Path

import pytest
import yaml

from blurbflow.docgen.__main__ import generated
from blurbflow.docgen.terms import (
    PACKAGE,
    file_names,
    log_lines,
    normal,
    path_parts,
    path_templates,
    provenance_rows,
    report_words,
    rules_and_commands,
    statuses,
)
from blurbflow.docgen.word_index import PAGE, MissingMeaning
from blurbflow.docgen.word_index import page as reference_page

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "concepts.md"
REFERENCE = ROOT / PAGE

# --- what the pages define ---------------------------------------------------------------------


def _row_terms(cell: str) -> list[str]:
    pieces = [p.strip() for p in cell.split(", ")]
    if len(pieces) > 1 and all(re.fullmatch(r"`[^`]+`", p) for p in pieces):
        return pieces
    return [cell.strip()]


def defined_terms(text: str | None = None) -> set[str]:
    text = DOC.read_text() + "\n" + REFERENCE.read_text() if text is None else text
    terms: set[str] = set()
    for line in text.splitlines():
        if re.match(r"\s*- \*\*", line):
            head = line.split("**:", 1)[0] + "**"
            terms.update(re.findall(r"\*\*(.+?)\*\*", head))
        elif line.startswith("|") and not re.match(r"\|[-\s|]+\|$", line):
            terms.update(_row_terms(line.strip("|").split("|")[0]))
    found = set()
    for term in terms:
        word = normal(term)
        found.add(word)
        if "/" in word:  # a path: its parts are defined too (`logs/prepare/{}.log`)
            found.update(part for part in word.split("/") if part)
    return found


def is_defined(word: str, terms: set[str]) -> bool:
    word = normal(word)
    if word in terms:
        return True
    if word.startswith("."):  # a suffix (`.comparisons.csv`): defined with its placeholder
        return any(t.endswith(word) for t in terms) or word[1:] in terms
    return False


def undefined(words, terms: set[str] | None = None) -> list[str]:
    terms = defined_terms() if terms is None else terms
    return sorted({w for w in words if not is_defined(w, terms)})


def _schema() -> dict:
    return yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())


def config_keys() -> set[str]:
    """Top-level keys, a study's keys and a model entry's keys, as the schema has them."""
    schema = _schema()["properties"]
    study = schema["studies"]["additionalProperties"]["properties"]
    model = schema["models"]["additionalProperties"]["properties"]
    return {*schema, *study, *model}


# --- unit tests: no run needed -----------------------------------------------------------------


def test_every_status_and_outcome_is_defined():
    assert undefined(statuses()) == []


def test_every_name_in_a_path_template_is_defined():
    parts = path_parts(path_templates())
    assert {"results", "cells", "seeds.json"} <= parts  # the scan sees the workflow's paths
    assert undefined(parts) == []


def test_every_file_name_the_library_writes_is_defined():
    names = file_names()
    assert {"result.json", "job.lock", "blurbflow-files.json", "earlier"} <= names
    assert undefined(names) == []


def test_every_field_of_a_result_and_column_of_cells_parquet_is_defined():
    from blurbflow.record.schema import COLUMNS, Result

    assert undefined({*Result.__annotations__, *COLUMNS}) == []


def test_every_column_of_the_comparisons_and_reproduction_tables_is_defined():
    from blurbflow.results import comparisons, reproduction

    assert undefined({*comparisons.COLUMNS, *reproduction.COLUMNS}) == []


def test_every_report_heading_and_column_is_defined():
    words = set(report_words())
    assert {"Overview", "Every seed", "p (Welch)"} <= words  # the parse sees the template
    assert undefined(words) == []


def test_every_log_line_is_explained():
    lines = log_lines()
    assert any("earlier result kept aside" in line for line in lines)
    assert undefined(lines) == []


def test_every_provenance_row_is_defined():
    rows = set(provenance_rows())
    assert {"config hash", "package {}", "cells' {}"} <= rows
    assert undefined(rows) == []


def test_every_rule_and_command_is_defined():
    names = rules_and_commands()
    assert {"finetune", "all", "build-model", "cell"} <= names
    assert undefined(names) == []


def test_every_study_and_model_key_is_named_on_the_page():
    text = DOC.read_text()
    named = set(re.findall(r"`([\w-]+)", text))
    assert sorted(config_keys() - named) == []


def test_the_check_catches_an_undefined_word():
    terms = defined_terms("- **ok**: fine\n| `seeds.json`, `job.lock` | x |\n| a, b | y |\n")
    assert terms == {"ok", "seeds.json", "job.lock", "a, b"}
    assert undefined(["ok", "job.lock", "nonsense.json", ".lock"], terms) == ["nonsense.json"]


def test_the_reference_page_is_the_generated_text():
    want = generated(ROOT, [PAGE])[PAGE]
    assert REFERENCE.read_text() == want, f"{PAGE} is out of date: run `python -m blurbflow.docgen`"


def test_a_word_the_code_uses_without_a_meaning_stops_the_generator():
    meanings = yaml.safe_load((PACKAGE / "docgen" / "reference.yaml").read_text())
    lines = meanings["log lines"]["entries"]
    kept = [e for e in lines if "earlier result kept aside" not in str(e)]
    meanings["log lines"]["entries"] = kept
    with pytest.raises(MissingMeaning, match="earlier result kept aside"):
        reference_page(meanings)
    meanings["log lines"]["entries"] = [*lines, {"seed {N}: a line no code prints": "stale"}]
    with pytest.raises(MissingMeaning, match="a line no code prints.*no longer has"):
        reference_page(meanings)


# The mechanisms a hyperparameter can be chosen by, each a config key the table must name.
MECHANISMS = {
    "select": "options/__init__.py",
    "best_grid_points": "results/aggregate.py",
    "hparams_from": "results/handover.py",
    "reference_models": "results/choices.py",
    "common_epoch": "results/common_epoch.py",
    "choose": "results/choices.py",
    "cross_validation": "results/folds.py",
    "export_models": "export/choose.py",
}
HEADER = ["mechanism", "config key", "decided when", "writes", "module", "refused"]


def selection_table() -> list[dict]:
    rows, header = [], None
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line else []
        if cells == HEADER:
            header = cells
        elif header and line.startswith("|"):
            if not re.fullmatch(r"[-\s|]+", line):
                rows.append(dict(zip(header, cells, strict=True)))
        elif header:
            break
    return rows


def test_the_selection_table_names_every_mechanism_with_when_what_where_and_refusals():
    rows = selection_table()
    assert rows, f"no table with the header {' | '.join(HEADER)} in {DOC}"
    for key, module in MECHANISMS.items():
        row = next((r for r in rows if f"`{key}" in r["config key"] + r["mechanism"]), None)
        assert row is not None, f"no row of the selection table for `{key}`"
        assert module in row["module"], f"`{key}`: the module {module} is not named"
        assert re.search(r"planned|run|tables|export", row["decided when"]), row
        assert row["writes"] and row["refused"], row
    for row in rows:
        for module in re.findall(r"`([\w/]+\.py)`", row["module"]):
            assert (PACKAGE / module).is_file(), f"{module}: no such module"
    assert "best_grid_points" in vars(importlib.import_module("blurbflow.results.aggregate"))


FILE_EXT = r"\.(json|jsonl|py|csv|md|tex|html|pt|log|txt|parquet|lock|safetensors|bin|yaml|j2|smk)$"


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ModuleNotFoundError, AttributeError):  # a name inside a module, not a module
        return False


EXTENDING = DOC.parent / "extending.md"


def test_the_extending_page_names_files_and_tests_that_exist():
    text = EXTENDING.read_text()
    for kind in ("built-in task", "task type", "recipe option", "metric", "table statistic"):
        assert re.search(rf"^## An? {kind}$", text, re.M | re.I), f"no section on a {kind}"
    for path in set(re.findall(r"`((?:src|tests|workflow|docs|config)/[\w./-]+)`", text)):
        assert (ROOT / path.rstrip("/")).exists(), f"`{path}`: no such file"
    for path, name in set(re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", text)):
        source = (ROOT / path).read_text()
        assert re.search(rf"^def {name}\(", source, re.M), f"{path} has no test {name}"
    for page in re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]+)?\)", text):
        assert (EXTENDING.parent / page).is_file(), f"link to {page}: no such page"


def test_the_schema_lists_every_task_type_and_format():
    """extending.md, "A task type": a type missing from the schema's enum is caught here."""
    from blurbflow.tasks.custom import FORMATS
    from blurbflow.tasks.types import TASK_TYPES

    entry = _schema()["properties"]["tasks"]["additionalProperties"]["properties"]
    assert entry["type"]["enum"] == list(TASK_TYPES)
    assert entry["format"]["enum"] == list(FORMATS)


def test_the_modules_functions_and_pages_the_page_points_to_exist():
    text = DOC.read_text()
    for page in re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]+)?\)", text):
        assert (DOC.parent / page).is_file(), f"link to {page}: no such page"
    for anchor in re.findall(r"\]\(#([\w-]+)\)", text):
        headings = re.findall(r"^#+ (.+)$", text, re.M)
        slugs = {re.sub(r"[^\w -]", "", h).strip().lower().replace(" ", "-") for h in headings}
        assert anchor in slugs, f"link to #{anchor}: no such heading"
    for module in set(re.findall(r"`((?:[\w]+/)*[\w]+\.(?:py|smk|yaml|j2))`", text)):
        candidates = [PACKAGE / module, ROOT / module, ROOT / "workflow" / "rules" / module]
        candidates.append(PACKAGE / "report" / "templates" / module)
        assert any(c.exists() for c in candidates), f"`{module}`: no such file"
    packages = {p.stem for p in PACKAGE.iterdir() if p.suffix == ".py" or p.is_dir()}
    for dotted in set(re.findall(r"`(?:blurbflow\.)?([a-z_]+(?:\.[A-Za-z_]+)+)`", text)):
        first = dotted.split(".")[0]
        if first not in packages or re.search(FILE_EXT, dotted):
            continue
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            name = "blurbflow." + ".".join(parts[:cut])
            if _module_exists(name):
                target = importlib.import_module(name)
                for attribute in parts[cut:]:
                    assert hasattr(target, attribute), f"`{dotted}`: no {attribute} in {name}"
                    target = getattr(target, attribute)
                break
        else:
            raise AssertionError(f"`{dotted}`: no such module")


# --- end to end: a finished demo's tree --------------------------------------------------------


def tree_names(workdir: Path, config: dict) -> set[str]:
    """The name of every file and folder of a finished run's results/ (and of resources/ but
    raw downloads and the hub cache's insides), with the config's names (model, task, recipe,
    study, hparams, input key, source) as placeholders."""
    results, resources = workdir / "results", workdir / "resources"
    known = {*config.get("models", {}), *config.get("recipes", {}), *config.get("studies", {})}
    for study in config.get("studies", {}).values():
        known.update(study.get("tasks", []))
    for folder, depth in (
        (results / "cells", 4),  # {model}/{task}/{recipe}/{hparams}
        (resources / "tokenized", 3),  # {model}/{task}/{input key}
        (resources / "data", 1),
        (resources / "raw", 1),
        (results / "models", 1),
    ):
        if folder.is_dir():
            for path in folder.glob("/".join(["*"] * depth)):
                known.update(path.relative_to(folder).parts)
    ordered = sorted(known, key=len, reverse=True)
    names = set()
    for base in (results, resources):
        for path in base.rglob("*"):
            parts = path.relative_to(workdir).parts
            if parts[:2] in (("resources", "raw"), ("resources", "hf-cache")) and len(parts) > 3:
                continue
            name = parts[-1]
            if name in known:
                continue
            for word in ordered:
                if name.startswith(word + "."):
                    name = "{}" + name[len(word) :]
                    break
            name = re.sub(r"^(seed|round)\d+", r"\1{}", name)  # seed3, round2.json
            names.add(re.sub(r"(\.|-)n\d+\.", r"\1n{}.", name))  # {hparams}.n4.log, seeds-n4
    return names | {"results", "resources"}


@pytest.mark.e2e
@pytest.mark.slow
def test_every_name_in_the_demo_results_tree_is_defined(demo):
    config = yaml.safe_load((demo / "config" / "demo.yaml").read_text())
    names = tree_names(demo, config)
    assert {"result.json", "seeds.json", "cells.parquet", "{}.csv"} <= names, sorted(names)
    assert undefined(names) == [], f"see the demo's tree under {demo}{os.sep}results"
