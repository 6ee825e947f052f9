"""The docs agree with the code: every link and cited section exists, every path the docs name
exists, and every command the code prints (error messages, the report, the plan's hints) or the
docs show parses as the tool's command line with Snakemake's target before `--config`. Each
check is shown failing on a planted example."""

from __future__ import annotations

import pytest
from docs_checks import (
    USER_DOCS,
    bash_commands,
    broken_links,
    code_files,
    command_problem,
    missing_citations,
    missing_paths,
    printed_commands,
    read,
)

PAGES = read(USER_DOCS)


def test_every_link_and_anchor_of_the_docs_resolves():
    assert broken_links(PAGES) == []


def test_a_broken_link_or_anchor_is_caught():
    planted = {
        "docs/x.md": "[a](nope.md) [b](slurm.md#no-such-heading) [c](#here) [d](#gone)\n# Here\n"
    }
    assert broken_links(planted) == [
        "docs/x.md: link to nope.md: no such file",
        "docs/x.md: link to slurm.md#no-such-heading: no heading #no-such-heading there",
        "docs/x.md: link to #gone: no heading #gone there",
    ]


def test_every_section_the_code_and_docs_cite_exists():
    # their examples of faults
    planting = ("tests/test_docs_links.py", "tests/docs_checks.py", "tests/test_docs_claims.py")
    files = [f for f in code_files() if f not in planting]
    assert missing_citations({**read(files), **PAGES}) == []


def test_a_citation_of_a_gone_section_is_caught():
    planted = {
        "config/x.yaml": '# Every key: README "Configuration".\n',
        "pyproject.toml": '# see README\n# "Running on SLURM"\n',
        "src/blurbflow/x.py": '"""docs/nope.md "Intro"; docs/data.md "Your own tasks"."""\n',
        "workflow/rules/x.smk": "# rule x (docs/gone.md): …\n",
        # a list item's bold lead-in is no section: a reader looks for a heading
        "slurm/x.yaml": '# When arrays are safe: docs/slurm.md "Job arrays".\n',
    }
    assert missing_citations(planted) == [
        'config/x.yaml: cites README.md "Configuration": no such section there',
        'pyproject.toml: cites README.md "Running on SLURM": no such section there',
        "src/blurbflow/x.py: names docs/nope.md: no such page",
        'src/blurbflow/x.py: cites docs/nope.md "Intro": no such page',
        "workflow/rules/x.smk: names docs/gone.md: no such page",
        'slurm/x.yaml: cites docs/slurm.md "Job arrays": no such section there',
    ]


def test_every_path_the_docs_name_exists():
    assert missing_paths(PAGES) == []


def test_a_path_or_test_that_does_not_exist_is_caught():
    planted = {
        "docs/x.md": "`tests/test_nope.py`, `train/nope.py`, `config/demo.yaml`, "
        "`tests/test_cell.py::test_nope`, `results/cells/{model}/`, `options.py`"
    }
    assert missing_paths(planted) == [
        "docs/x.md: `tests/test_cell.py::test_nope`: no such test",
        "docs/x.md: `tests/test_nope.py`: no such file",
        "docs/x.md: `train/nope.py`: no such file",
    ]


def _commands_of_the_code() -> list[tuple[str, str]]:
    printing = [f for f in code_files() if f.startswith(("src/", "workflow/", "Snakefile"))]
    found = printed_commands(read(printing))
    return [(source, command) for source, commands in found.items() for command in commands]


def test_the_scan_finds_the_commands_the_code_prints():
    sources = {source for source, _ in _commands_of_the_code()}
    # a model error's example, the report's debug command, an inputs' fix, an export's fix
    assert "src/blurbflow/models/candidate.py" in sources
    assert {"src/blurbflow/train/debug_cell.py", "src/blurbflow/export/folder.py"} <= sources


def test_the_reports_debug_command_parses_with_its_config_files_and_overrides():
    from blurbflow.util.provenance import cell_command

    launch = {
        "configfiles": ["config/blurb.yaml", "config/blurb-smoke.yaml"],
        "config": {"model": "m"},
    }
    command = cell_command("results/cells/m/biosses/standard/lr2e-05-bs16/seed1", launch)
    assert command_problem(command) is None, command


@pytest.mark.parametrize(("source", "command"), _commands_of_the_code())
def test_every_command_the_code_prints_parses_with_the_target_first(source, command):
    assert command_problem(command) is None, f"{source}: `{command}`: {command_problem(command)}"


def test_every_command_of_the_docs_parses_with_the_target_first():
    problems = []
    for page, text in PAGES.items():
        for command in bash_commands(text):
            if command.startswith((".venv/bin/snakemake", ".venv/bin/python -m blurbflow ")):
                if problem := command_problem(command):
                    problems.append(f"{page}: `{command}`: {problem}")
    assert problems == []


def test_a_command_with_its_target_after_config_is_caught():
    planted = printed_commands(
        {
            "src/x.py": 'HOW = ("e.g. `.venv/bin/snakemake --configfile config/blurb.yaml '
            '--config " "model=org/name all`")\nf"blurbflow cell {folder} --nope"\n',
            "workflow/x.smk": 'print("run `snakemake --configfile config/demo.yaml all` now")\n',
        }
    )
    assert planted == {
        "src/x.py": [
            ".venv/bin/snakemake --configfile config/blurb.yaml --config model=org/name all",
            "blurbflow cell X --nope",
        ],
        "workflow/x.smk": ["snakemake --configfile config/demo.yaml all"],
    }
    problems = [command_problem(c) for commands in planted.values() for c in commands]
    assert problems == [
        "['all'] taken as --config/--configfile values: put the target first",
        "does not parse: blurbflow: error: unrecognized arguments: --nope",
        "['all'] taken as --config/--configfile values: put the target first",
    ]
    assert command_problem("snakemake all --configfile a.yaml b.yaml --config model=x") is None
