# Validate the config once, while the workflow is read and before any job, each error naming the
# key path and the fix: unknown keys, unsafe names (they become folders and command arguments),
# non-finite numbers, the JSON schema, references to models/tasks/recipes, bounded sizes, safe
# paths, missing local models (blurbflow.validate), and each study's table layout (a dimension
# with several values must be a row or a column, else the table would hide it) and the entries
# its `published:` block names (blurbflow.results.published_values). Snakemake's
# `validate` fills the schema's defaults. Reading the workflow writes and deletes nothing.
# First, `--config model=…` becomes the model `candidate` (blurbflow.models.candidate).
import sys

import yaml

from blurbflow.models.candidate import apply_model_option
from blurbflow.results.layout import study_layout
from blurbflow.results.published_values import check_published
from blurbflow.results.statistics import with_statistics
from blurbflow.validate import ConfigError, check_config

CONFIG_SCHEMA = "../schemas/config.schema.yaml"

try:
    apply_model_option(config)
    # the `statistic` enum comes from the statistics registry (the file keeps none)
    _schema = with_statistics(yaml.safe_load(open(workflow.source_path(CONFIG_SCHEMA))))
    check_config(config, _schema)
    for _name, _study in config["studies"].items():
        try:
            study_layout(_study)
        except ValueError as err:
            raise ConfigError(f"studies.{_name}.table: {err}") from None
        try:
            for _warning in check_published(_study, config):
                print(f"blurbflow: warning: studies.{_name}.published.{_warning}", file=sys.stderr)
        except ValueError as err:
            raise ConfigError(f"studies.{_name}.published.{err}") from None
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None
validate(config, CONFIG_SCHEMA)
