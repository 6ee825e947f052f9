# Validate the config once, while the workflow is read and before any job, each error naming the
# key path and the fix: unknown keys, unsafe names (they become folders and command arguments),
# non-finite numbers, the JSON schema, references to models/tasks/recipes, bounded sizes, safe
# paths, missing local models (blurbflow.config.validate), and each study's table layout (a dimension
# with several values must be a row or a column, else the table would hide it) and the entries
# its `published:` block names, each a row and column of that table
# (blurbflow.results.published_values). Snakemake's
# `validate` fills the schema's defaults. Reading the workflow writes and deletes nothing.
# First, `--config model=…` becomes the model `candidate` (blurbflow.models.candidate).
import yaml

from blurbflow.models.candidate import apply_model_option
from blurbflow.results.layout import study_layout
from blurbflow.results.published_values import check_study_published
from blurbflow.results.statistics import with_statistics
from blurbflow.config.validate import ConfigError, check_config

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
        check_study_published(_name, _study, config)
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None
validate(config, CONFIG_SCHEMA)
