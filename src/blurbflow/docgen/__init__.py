"""Generated documentation: what is written about the configuration comes from the one place
each thing is defined. `python -m blurbflow.docgen` rewrites the recipe options of the config
schema and of docs/recipes.md from blurbflow.options (each field's help, choices and schema), and
writes the configuration reference config/README.md from the schema; `--check` writes nothing
and fails when a file is out of date (tests/test_option_docs.py, tests/test_config_reference.py).
"""
