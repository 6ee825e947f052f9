"""Exporting and publishing fine-tuned models (docs/models.md): a study's `export_models` picks
per table entry the seed best on dev (or every seed) whose recipe kept its model
(`keep_model: true`), verifies it and writes it with the entry's model card under
`results/models/{study}/` (folder); the config's `publish` uploads those folders to the Hugging
Face Hub (publish). `check` is plain Python, read while Snakemake reads the workflow; the other
modules are imported by the rules' scripts only."""
