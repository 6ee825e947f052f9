"""Checks that the docs agree with the code, as functions of texts so that a test can plant a
fault in each (tests/test_docs_links.py, tests/test_docs_budget.py). Each returns its problems
as lines naming the file and the fix."""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import re
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "blurbflow"
# The pages a user reads (the word budget's pages): README, docs/, the config reference and the
# benchmarks' page.
USER_DOCS = ["README.md", "config/README.md", "benchmarks/README.md"]
USER_DOCS += sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))
GENERATED_REGION = re.compile(r"<!-- BEGIN .*?<!-- END [^>]*-->", re.S)
GENERATED_PAGES = {"config/README.md", "docs/reference.md"}  # whole pages from docgen


def read(paths) -> dict[str, str]:
    return {path: (REPO / path).read_text() for path in paths}


def code_files() -> list[str]:
    """Files whose comments and strings may cite a page: code, workflow, configs, profiles."""
    found = [REPO / "Snakefile", REPO / "config.yaml", REPO / "pyproject.toml"]
    for folder, pattern in (
        ("src", "*.py"),
        ("src", "*.yaml"),
        ("src", "*.j2"),
        ("workflow", "*.smk"),
        ("workflow", "*.py"),
        ("workflow", "*.yaml"),
        ("config", "*.yaml"),
        ("slurm", "*.yaml"),
        ("profiles", "*.yaml"),
        ("tests", "*.py"),
        ("benchmarks", "*.py"),
    ):
        found += sorted((REPO / folder).rglob(pattern))
    return [str(p.relative_to(REPO)) for p in found if p.is_file()]


# -- sections and links -----------------------------------------------------------------------
def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower())
    return text.replace(" ", "-")


def sections(text: str) -> list[str]:
    """What a citation may name on a page: its headings, its table rows' first cells (a row of
    fidelity.md's map) and the backticked names in its table rows (a study). Not a list item's
    bold lead-in: a reader looks for a heading."""
    found = re.findall(r"^#+ (.+?)\s*$", text, re.M)
    found += re.findall(r"^\| ([^|]+?) \|", text, re.M)
    for row in re.findall(r"^\|.*$", text, re.M):
        found += re.findall(r"`([\w-]+)`", row)
    return [h.replace("`", "") for h in found]


def page_of(source: str, target: str) -> str:
    """A link's target page, as a path from the repository."""
    return str((REPO / source).parent.joinpath(target).resolve().relative_to(REPO))


def broken_links(pages: dict[str, str], known: dict[str, str] | None = None) -> list[str]:
    """Relative markdown links whose page or anchor does not exist."""
    known = {**(known or {}), **pages}
    problems = []
    for source, text in pages.items():
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            page = page_of(source, path) if path else source
            if page not in known and not (REPO / page).exists():
                problems.append(f"{source}: link to {target}: no such file")
                continue
            if anchor and page.endswith(".md"):
                text_of = known.get(page) or (REPO / page).read_text()
                if anchor not in {slug(h) for h in re.findall(r"^#+ (.+?)\s*$", text_of, re.M)}:
                    problems.append(f"{source}: link to {target}: no heading #{anchor} there")
    return problems


CITATION = re.compile(
    r"(README(?:\.md)?|(?:[\w-]+/)*[\w-]+\.md)(?:'s)?,? (?:section )?[\"“]([^\"”]{2,80})[\"”]"
)


def _joined(text: str) -> str:
    """Text with comment markers and line breaks out, so a citation may span lines."""
    return re.sub(r"\n\s*(?:#+|//|\*)?\s*", " ", text)


def missing_citations(files: dict[str, str], known: dict[str, str] | None = None) -> list[str]:
    """`README "X"`, `docs/page.md, "X"`: the page must exist and have a section X (a heading, a
    table row or a study's name starting with X: `sections`); a page named anywhere must exist."""
    known = known or {}
    problems = []
    for source, text in files.items():
        for page in sorted(set(re.findall(r"\b((?:docs|config|benchmarks)/[\w-]+\.md)\b", text))):
            if page not in known and not (REPO / page).is_file():
                problems.append(f"{source}: names {page}: no such page")
        for page, title in CITATION.findall(_joined(text)):
            page = "README.md" if page.startswith("README") and "/" not in page else page
            candidates = [page, page_of(source, page), f"docs/{page}"]
            found = next((p for p in candidates if p in known or (REPO / p).is_file()), None)
            if found is None:
                problems.append(f'{source}: cites {page} "{title}": no such page')
                continue
            text_of = known.get(found) or (REPO / found).read_text()
            if not any(h.startswith(title) for h in sections(text_of)):
                problems.append(f'{source}: cites {found} "{title}": no such section there')
    return problems


# -- paths named in the docs ------------------------------------------------------------------
TOP = r"(?:src|tests|workflow|docs|config|benchmarks|slurm|profiles|envs|\.ci)"
REPO_PATH = re.compile(rf"^{TOP}/[\w./-]+$|^[\w.-]+\.(?:py|yaml|toml|cff|md)$|^Snakefile$")
PACKAGE_PATH = re.compile(r"^[a-z_]+/[\w/]+\.(?:py|j2)$")  # a module: `train/fit.py`


def missing_paths(pages: dict[str, str]) -> list[str]:
    """Backticked repository paths (`tests/test_x.py`, `config/demo.yaml`, `train/fit.py`) and
    tests (`tests/test_x.py::test_name`) that do not exist."""
    problems = []
    for source, text in pages.items():
        for token in set(re.findall(r"`([^`\s]+)`", text)):
            path, _, test = token.partition("::")
            if re.search(r"[{}<>*…]", path) or path.startswith(("results/", "resources/")):
                continue
            if REPO_PATH.match(path):
                # `config/grid.py` is the package's; `config/demo.yaml` the repository's
                options = [REPO / path, (REPO / source).parent / path, PACKAGE / path]
            elif PACKAGE_PATH.match(path) and (PACKAGE / path.split("/")[0]).is_dir():
                options = [PACKAGE / path]
            else:
                continue
            if path.count("/") == 0 and path.endswith((".py", ".md")):
                continue  # a bare file name (`options.py`, `README.md`): not a path
            found = next((o for o in options if o.exists()), None)
            if found is None:
                problems.append(f"{source}: `{path}`: no such file")
            elif test and not re.search(rf"^def {test}\(", found.read_text(), re.M):
                problems.append(f"{source}: `{token}`: no such test")
    return sorted(problems)


# -- commands ---------------------------------------------------------------------------------
COMMAND = re.compile(
    r"^(?:[A-Z_]+=\S+ )*(?:\.venv/bin/)?(?:snakemake|blurbflow|python -m blurbflow)(?: |$)"
)
IN_TICKS = re.compile(r"`((?:\.venv/bin/)?(?:snakemake|blurbflow|python -m blurbflow) [^`]+)`")
WHOLE = re.compile(r"(?:snakemake|blurbflow) [-a-z][\w-]* \S")  # a string that is a command


def _string_constants(source: str, text: str) -> list[str]:
    """The strings of a file: a Python file's constants (f-strings' fields as `X`), a
    workflow file's quoted strings."""
    if not source.endswith(".py"):
        return re.findall(r'"([^"\n]*)"', text)
    strings = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else "X" for v in node.values]
            strings.append("".join(str(p) for p in parts))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.append(node.value)
    return strings


def _is_command(text: str) -> bool:
    """A command line, not a mention (`blurbflow cell`) or a label (`blurbflow study X: …`):
    a snakemake command, or a blurbflow subcommand with its arguments."""
    words = text.replace("python -m blurbflow", "blurbflow").split()
    tool = words[0].rsplit("/", 1)[-1]
    if tool == "snakemake":
        return True
    from blurbflow.docgen.terms import commands

    return len(words) > 2 and words[1] in commands()


def printed_commands(files: dict[str, str]) -> dict[str, list[str]]:
    """file → the commands its strings print: backticked ones, and strings that are a command."""
    found: dict[str, list[str]] = {}
    for source, text in files.items():
        for string in _string_constants(source, text):
            commands = IN_TICKS.findall(string)
            if not commands and "\n" not in string.strip() and WHOLE.match(string):
                commands = [string]
            commands = [c for c in commands if _is_command(c)]
            mine = found.setdefault(source, [])
            mine.extend(c for c in (" ".join(c.split()) for c in commands) if c not in mine)
    return {source: commands for source, commands in found.items() if commands}


def bash_commands(text: str) -> list[str]:
    """The commands of a page's ```bash blocks, comments dropped."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if words := shlex.split(line, comments=True):
                commands.append(shlex.join(words))
    return commands


@functools.cache
def _snakemake_parser():
    from snakemake.cli import get_argument_parser

    return get_argument_parser()


def command_problem(command: str) -> str | None:
    """Why `command` would not run as the tool reads it: a parse error, or a target (or any
    word) swallowed by `--config`/`--configfile`, which take every word after them."""
    words = shlex.split(command.replace("…", "X").replace("...", "X"))
    while words and re.match(r"[A-Z_]+=", words[0]):
        words.pop(0)  # SLURM_CONF=/dev/null …
    tool = words.pop(0).rsplit("/", 1)[-1]
    if tool == "python":
        words = words[2:]  # -m blurbflow
        tool = "blurbflow"
    from blurbflow.cli import build_parser

    parser = _snakemake_parser() if tool == "snakemake" else build_parser()
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            args = parser.parse_args(words)
    except SystemExit:
        if "arguments are required" in errors.getvalue():
            return None  # a mention (`blurbflow aggregate --rescore`), not a whole command
        return "does not parse: " + errors.getvalue().strip().splitlines()[-1]
    if tool == "snakemake":
        swallowed = [w for w in args.config or () if "=" not in w and w != "X"]
        files = [str(f) for f in args.configfile or ()]
        swallowed += [f for f in files if not f.endswith((".yaml", ".yml", ".json")) and f != "X"]
        if swallowed:
            return f"{swallowed} taken as --config/--configfile values: put the target first"
    return None


# -- figures, issue numbers, words ------------------------------------------------------------
FIGURE = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w,]\d)")  # 39,405 and 1,842


def stated(text: str) -> str:
    """A page's own text: generated regions out."""
    return GENERATED_REGION.sub("", text)


def is_round(number: str) -> bool:
    """1,000 or 200,000: a limit or a setting in round numbers, not a counted figure."""
    return bool(re.fullmatch(r"\d0*", number.replace(",", "")))


def repeated_figures(pages: dict[str, str]) -> list[str]:
    """Figures (numbers of thousands, counted or measured: 39,405 cells, 1,842 jobs) stated on
    more than one page outside what docgen generates: state one once and link it, or generate
    it. Round numbers (1,000) are limits and settings, said where they apply."""
    pages_of: dict[str, list[str]] = {}
    for page, text in pages.items():
        if page in GENERATED_PAGES:
            continue
        for figure in {f for f in FIGURE.findall(stated(text)) if not is_round(f)}:
            pages_of.setdefault(figure, []).append(page)
    return sorted(f"{f} on {', '.join(sorted(p))}" for f, p in pages_of.items() if len(p) > 1)


ISSUE = re.compile(r"\b[Ii]ssues? #?\d+")


def issue_numbers(pages: dict[str, str]) -> list[str]:
    """This project's issue numbers, which readers cannot see (a link to another project's
    issue is fine: its number is the link's text)."""
    problems = []
    for page, text in pages.items():
        text = re.sub(r"\[[^\]]*\]\(https?://[^)]*\)", "", text)
        problems += [f"{page}: {hit}" for hit in ISSUE.findall(text)]
    return problems


def words(text: str) -> int:
    """As `wc -w` counts them."""
    return len(text.split())
