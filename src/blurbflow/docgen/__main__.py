"""`python -m blurbflow.docgen [--check] [--only PATH…]`: see blurbflow.docgen."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from blurbflow.docgen import __doc__ as ABOUT
from blurbflow.docgen import engine_table
from blurbflow.docgen.options import (
    COMMAND,
    DEFAULTS_MARKS,
    DEFAULTS_PAGE,
    SCHEMA_MARKS,
    defaults_block,
    options_block,
    replace_region,
)
from blurbflow.docgen.paper_cost import MARKS, cost_block, paper_plan
from blurbflow.docgen.reference import reference
from blurbflow.docgen.word_index import PAGE, page

SCHEMA = "workflow/schemas/config.schema.yaml"
REFERENCE = "config/README.md"
README = "README.md"


# -- files ----------------------------------------------------------------------------------------
def schema_text(root: Path) -> str:
    return replace_region((root / SCHEMA).read_text(), *SCHEMA_MARKS, options_block(), SCHEMA)


def readme_text(root: Path, plan: dict | None = None) -> str:
    """README.md with the paper config's cost from `snakemake plan` (`plan`: already made)."""
    block = cost_block(paper_plan(root) if plan is None else plan)
    return replace_region((root / README).read_text(), *MARKS, block, README)


def region(path: str, marks: tuple[str, str], block: Callable[[], str]) -> Callable[[Path], str]:
    """A page of `path` with its generated region (between `marks`) rewritten by `block`."""
    return lambda root: replace_region((root / path).read_text(), *marks, block(), path)


# path → its text, from the repository folder; in the order they depend on each other
TARGETS: dict[str, Callable[[Path], str]] = {
    SCHEMA: schema_text,
    REFERENCE: lambda root: reference(yaml.safe_load(schema_text(root))),
    PAGE: lambda root: page(),
    engine_table.PAGE: region(engine_table.PAGE, engine_table.MARKS, engine_table.engine_block),
    DEFAULTS_PAGE: region(DEFAULTS_PAGE, DEFAULTS_MARKS, defaults_block),
    README: readme_text,
}


def generated(root: Path, only: list[str] | None = None) -> dict[str, str]:
    """path → the text it should have."""
    unknown = sorted(set(only or ()) - set(TARGETS))
    if unknown:
        raise ValueError(f"{COMMAND} --only: no generated file {unknown}; known: {list(TARGETS)}")
    return {path: make(root) for path, make in TARGETS.items() if not only or path in only}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=ABOUT.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; fail on a difference")
    parser.add_argument("--root", default=".", help="the repository folder")
    parser.add_argument("--only", nargs="+", metavar="PATH", help=f"some of {list(TARGETS)}")
    args = parser.parse_args(argv)
    root = Path(args.root)
    stale = []
    for path, text in generated(root, args.only).items():
        target = root / path
        if target.exists() and target.read_text() == text:
            continue
        stale.append(path)
        if not args.check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    if args.check and stale:
        print(f"out of date: {', '.join(stale)}; run `{COMMAND}`", file=sys.stderr)
        return 1
    for path in [] if args.check else stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
