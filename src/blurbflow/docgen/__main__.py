"""`python -m blurbflow.docgen [--check]`: see blurbflow.docgen."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from blurbflow.docgen import __doc__ as ABOUT
from blurbflow.docgen.options import (
    COMMAND,
    DOC_MARKS,
    SCHEMA_MARKS,
    options_block,
    recipes_doc_block,
    replace_region,
)
from blurbflow.docgen.reference import reference

SCHEMA = "workflow/schemas/config.schema.yaml"
RECIPES_DOC = "docs/recipes.md"
REFERENCE = "config/README.md"


# -- files ----------------------------------------------------------------------------------------
def generated(root: Path) -> dict[str, str]:
    """path → the text it should have."""
    schema_text = (root / SCHEMA).read_text()
    schema_text = replace_region(schema_text, *SCHEMA_MARKS, options_block(), SCHEMA)
    schema = yaml.safe_load(schema_text)
    doc = (root / RECIPES_DOC).read_text()
    doc = replace_region(doc, *DOC_MARKS, recipes_doc_block(schema["$defs"]), RECIPES_DOC)
    return {SCHEMA: schema_text, RECIPES_DOC: doc, REFERENCE: reference(schema)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=ABOUT.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; fail on a difference")
    parser.add_argument("--root", default=".", help="the repository folder")
    args = parser.parse_args(argv)
    root = Path(args.root)
    stale = []
    for path, text in generated(root).items():
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
