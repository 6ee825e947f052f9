"""Generated documentation: what is written about the project comes from the one place each
thing is defined. `python -m blurbflow.docgen` rewrites the recipe options of the config schema
from blurbflow.options (each field's help, choices and schema); writes the configuration
reference config/README.md from the schema, the reference page docs/reference.md from the code
(blurbflow.docgen.terms) and docgen/reference.yaml, docs/engine.md's table of what `engine:
auto` runs per device (blurbflow.docgen.engine_table), docs/recipes.md's option defaults, and
the README's paper-config cost from `snakemake plan`'s code. `--check` writes nothing and fails
when a file is out of date (tests/test_option_docs.py, tests/test_config_reference.py,
tests/test_docs_concepts.py, tests/test_docs_claims.py, tests/test_docs_budget.py).
"""
