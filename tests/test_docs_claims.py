"""What the docs claim about the code is what the code does: cells.parquet's columns (and the
reference page's marks), the commands the code prints, engine.md's policy table and layout, the
stage versions, where a name is defined, the verdicts' notes, the option defaults; and the docs'
words: terms defined before use, names of several meanings qualified. Each check is shown
failing on a planted example."""

from __future__ import annotations

import re

from docs_checks import REPO, USER_DOCS, code_files, printed_commands, read
from docs_claims import (
    column_claims,
    layout_problems,
    misplaced_names,
    stage_numbers,
    stage_version_problems,
    unprinted_commands,
    unwritten_paths,
)
from docs_terms import (
    SEVERAL,
    first_use_problems,
    glossary_homonyms,
    unqualified,
    unqualified_words,
    verdict_problems,
)

from blurbflow.docgen import engine_table
from blurbflow.docgen.__main__ import generated
from blurbflow.docgen.options import DEFAULTS_PAGE

PAGES = read(USER_DOCS)
CLAIMS = {**PAGES, **read(["CHANGELOG.md"])}  # history too: a claim there was read as true
HOMONYMS = ["select", "eval_batch_size", "checkpoint", "published", "delta", "failed", "defaults"]
# (page, term) whose first use on that page is not yet linked to the glossary: the fidelity
# page's rows are reworked apart; its first `printed_only` gets the link then
PENDING = {"docs/fidelity.md:printed_only", "docs/fidelity.md:dev", "docs/fidelity.md:verdict"}


def _columns():
    from blurbflow.record.schema import COLUMNS, Result

    return set(Result.__annotations__) | set(COLUMNS), set(COLUMNS)


def test_what_the_docs_say_cells_parquet_holds_is_a_column():
    assert column_claims(CLAIMS, *_columns()) == []


def test_a_field_called_a_column_is_caught():
    planted = {"docs/x.md": "result.json and cells.parquet record `batch_shapes` and `engine`."}
    assert column_claims(planted, *_columns()) == [
        "docs/x.md: `engine` is no column of cells.parquet: result.json and cells.parquet record "
        "`batch_shapes` and `engine`."
    ]


def marked(text: str) -> set[str]:
    """The names the reference page marks (column)/(columns)."""
    section = text.split("## Fields of result.json", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in section.splitlines():
        if re.match(r"- .*\(columns?\):", line):
            names.update(re.findall(r"\*\*`(\w+)`\*\*", line.split(":")[0]))
    return names


def test_the_reference_marks_exactly_the_columns():
    _, columns = _columns()
    assert marked(PAGES["docs/reference.md"]) == columns
    planted = PAGES["docs/reference.md"].replace("**`dev`**, **`test`** (columns)", "**`dev`**")
    assert columns - marked(planted) == {"dev", "test"}


def printed() -> list[str]:
    """Every command the code prints, its fields as X: strings of the code, the report's debug
    command and the one `blurbflow cell` names to build a missing input."""
    from blurbflow.train.debug_cell import _build
    from blurbflow.util.provenance import cell_command

    files = [f for f in code_files() if f.startswith(("src/", "workflow/", "Snakefile"))]
    found = [c for commands in printed_commands(read(files)).values() for c in commands]
    launch = {"configfiles": ["X"], "config": {"X": "X"}}
    return [*found, cell_command("X", launch), _build(launch, "X")]


def test_every_command_the_docs_quote_is_one_the_code_prints():
    assert unprinted_commands(PAGES, printed()) == []


def test_a_quoted_command_the_code_does_not_print_is_caught():
    planted = {
        "README.md": "prints `.venv/bin/blurbflow cell <folder> --configfile <files> --config "
        "<key=value> --pdb`; `.venv/bin/blurbflow cell <folder>` re-runs a cell; build with "
        "`.venv/bin/snakemake resources/tokenized/… --cores 1 --configfile config/demo.yaml`"
    }
    assert unprinted_commands(planted, printed()) == [
        "README.md: `.venv/bin/blurbflow cell <folder> --configfile <files> --config <key=value> "
        "--pdb` is no command the code prints"
    ]


def test_every_path_the_docs_say_a_run_writes_is_one_the_code_writes():
    from blurbflow.docgen.terms import path_templates

    assert unwritten_paths(PAGES, sorted(path_templates())) == []


def test_a_path_the_code_does_not_write_is_caught():
    from blurbflow.docgen.terms import path_templates

    planted = {
        "docs/reference.md": "- **`results/selection/reference/`**: selection files, of "
        "hand-overs (`{model}/{task}/{recipe}.json`) and of reference models (`{models}/…`)\n"
        "`results/cells/{model}/`, `results/cell/x.json`, `results/formats.py`\n"
    }
    assert unwritten_paths(planted, sorted(path_templates())) == [
        "docs/reference.md: `results/cell/x.json` is no path the code writes",
        "docs/reference.md: `results/selection/reference/{model}/{task}/{recipe}.json` is no "
        "path the code writes",
    ]


def test_the_engine_table_and_option_defaults_are_generated_from_the_code():
    want = generated(REPO, [engine_table.PAGE, DEFAULTS_PAGE])
    for page, text in want.items():
        assert PAGES[page] == text, f"{page} is out of date: run `python -m blurbflow.docgen`"
    assert "`lr: 5e-05`, `batch_size: 32`" in want[DEFAULTS_PAGE]
    assert set(engine_table.policies()) == set(engine_table.WHY)


def test_the_engine_table_follows_a_changed_policy(monkeypatch):
    from blurbflow.train import engine

    row = "| `pad_multiple` | `1` | `padded`: `64`; `micro_batches`: `1` |"
    assert row in PAGES[engine_table.PAGE]
    monkeypatch.setattr(engine, "BUCKET", 32)
    block = engine_table.engine_block()
    assert row.replace("64", "32") in block and row not in block


def test_the_batching_help_says_what_cuda_runs():
    import torch

    from blurbflow.options import recipe_options
    from blurbflow.train import engine

    auto = engine.resolve(engine.Settings(), torch.device("cuda"), "bf16", "bucketed", False, False)
    assert auto.batch_shapes == "padded"
    help_ = recipe_options()["batching"]["help"]
    assert "CUDA" in help_ and "padded" in help_, help_


def test_the_layout_lists_the_paths_rule_files_and_pages_there_are():
    assert layout_problems(PAGES["docs/engine.md"]) == []


def test_a_layout_missing_a_rule_file_or_naming_a_gone_path_is_caught():
    planted = PAGES["docs/engine.md"].replace("launch, ", "").replace("profiles/local/", "nope/")
    planted = planted.replace("tracking, ", "tracking, no-such-page, ")
    assert layout_problems(planted) == [
        "docs/engine.md Layout: docs/ names no-such-page: no such file",
        "docs/engine.md Layout: nope/: no such path",
        "docs/engine.md Layout: workflow/rules/*.smk leaves out launch",
    ]


def test_the_stage_versions_page_names_every_stage_version():
    numbers = stage_numbers((REPO / "src/blurbflow/stage_versions.py").read_text())
    assert {"PARSERS", "ENCODERS", "TOKENIZER_SETTINGS", "EXTRACT"} <= set(numbers)
    assert stage_version_problems(PAGES["docs/extending.md"], numbers) == []
    planted = PAGES["docs/extending.md"].replace("`TOKENIZER_SETTINGS[...]`, ", "")
    assert stage_version_problems(planted, numbers) == [
        "docs/extending.md: `TOKENIZER_SETTINGS` (stage_versions.py) is not named under "
        '"Changing what a stage writes"'
    ]


def test_a_name_is_said_to_live_where_it_is_defined():
    assert misplaced_names(PAGES) == []
    planted = {"docs/x.md": "(`options/__init__.py` `InputOptions`; `options/fields.py` `S`)"}
    assert misplaced_names(planted) == [
        "docs/x.md: `InputOptions` is not defined in `options/__init__.py`"
    ]


def verdict_cases() -> list[tuple[str | None, str]]:
    """(verdict, note) of the entries the code cannot decide: no ok seed, one ok seed, a
    median's BLURB score, a statistic without an interval."""
    from blurbflow.results.reproduction import _row

    cases = [
        ("mean", None, {"gad": []}, None),
        ("mean", 80.0, {"gad": [80.0]}, None),
        ("median", 80.0, {"gad": [80.0, 81.0], "biosses": [1.0, 2.0]}, ["gad", "biosses"]),
        ("std", 1.0, {"gad": [80.0, 81.0, 82.0]}, None),
    ]
    rows = [_row({}, stat, 80.0, ours, seeds, parts, 0.05) for stat, ours, seeds, parts in cases]
    return [(row["verdict"], row["note"]) for row in rows]


def test_each_verdict_says_the_notes_the_code_writes():
    cases = verdict_cases()
    assert (None, "no ok seed") in cases and ("inconclusive", cases[1][1]) in cases
    assert verdict_problems(PAGES["docs/results.md"], cases) == []


def test_a_verdict_said_of_the_wrong_entries_is_caught():
    planted = (
        "### The verdict\n\n- **inconclusive**: neither.\n- **not comparable**: no interval "
        "(`fewer than 2 ok seeds`) or no number of ours (`no ok seed`).\n\n## Power\n"
    )
    assert verdict_problems(planted, verdict_cases()) == [
        'docs/results.md "The verdict": **inconclusive** does not quote `fewer than 2 ok seeds`',
        'docs/results.md "The verdict": **not comparable** does not quote `a median\'s BLURB '
        "score has no interval`",
        'docs/results.md "The verdict": **not comparable** does not quote `no interval for the '
        "std`",
    ]


def test_every_page_defines_or_links_each_term_at_its_first_use():
    problems = first_use_problems(PAGES)
    pending = {f"{p.split(':')[0]}:{p.split('`')[1]}": p for p in problems}
    assert [p for key, p in pending.items() if key not in PENDING] == []
    assert PENDING <= set(pending), f"linked now, take out of PENDING: {PENDING - set(pending)}"


def test_a_term_used_before_its_definition_is_caught():
    planted = {
        "docs/x.md": "Chosen on dev.\n\nThe [verdict](concepts.md#seeds) and **power**.\n"
        "`results/{input key}/` then `train+dev`, [manifest](slurm.md).\n",
    }
    assert first_use_problems(planted) == [
        "docs/x.md:1: `dev` before its definition: link its first use to the glossary "
        "(concepts.md)",
        "docs/x.md:4: `manifest` before its definition: link its first use to the glossary "
        "(concepts.md)",
    ]


def test_names_of_several_meanings_are_qualified_and_listed_in_the_glossary():
    assert unqualified(PAGES) == []
    # the fidelity map's checkpoints are all pretrained models, its subject: one meaning there
    assert unqualified_words({p: t for p, t in PAGES.items() if p != "docs/fidelity.md"}) == []
    assert glossary_homonyms(PAGES["docs/concepts.md"], HOMONYMS) == []
    assert set(SEVERAL) <= set(HOMONYMS)


def test_a_bare_name_of_several_meanings_is_caught():
    planted = {
        "docs/x.md": "The `select` picks. A recipe's `select` and `select: common_epoch`.\n"
        "Set `eval_batch_size` lower; `engine.eval_batch_size`; the study's `delta`.\n"
    }
    words = {"docs/x.md": "A checkpoint is written; a training checkpoint, `checkpoint.pt`.\n"}
    assert unqualified_words(words) == ["docs/x.md:1: 'checkpoint' alone: say which"]
    assert unqualified(planted) == [
        "docs/x.md:1: `select` alone: say which (recipe|study|export)",
        "docs/x.md:2: `eval_batch_size` alone: say which (recipe|engine)",
    ]
    assert glossary_homonyms(
        "## Same word, different things\n\n- **select**: …\n", ["select", "delta"]
    ) == ["docs/concepts.md: 'delta' not in that list"]
