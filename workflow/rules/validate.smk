# Validate the config once, while the workflow is read and before any job, each error naming the
# key path and the fix: unknown keys, unsafe names (they become folders and command arguments),
# non-finite numbers, the JSON schema, references to models/tasks/recipes, bounded sizes, safe
# paths, missing local models (blurbflow.config.validate), and each study's table layout (a dimension
# with several values must be a row or a column, else the table would hide it) and the entries
# its `published:` block names, each a row and column of that table
# (blurbflow.results.published_values). Snakemake's
# `validate` fills the schema's defaults. Reading the workflow writes and deletes nothing.
# First, `--config model=…` becomes the model `candidate` (blurbflow.models.candidate). A config
# this code validated before comes back validated, with its jobs (blurbflow.job_cache): only the
# checks that read the file system run again.
import copy

import yaml

from blurbflow import job_cache
from blurbflow.models.candidate import apply_model_option
from blurbflow.results.layout import study_layout
from blurbflow.results.published_values import check_study_published
from blurbflow.results.statistics import with_statistics
from blurbflow.config.validate import ConfigError, check_config, check_local_models

CONFIG_SCHEMA = "../schemas/config.schema.yaml"

try:
    apply_model_option(config)
    PLAN_CACHE = job_cache.cache_path(config, [os.path.join(workflow.basedir, "workflow")])
    PLANNED = job_cache.load(PLAN_CACHE)
    if PLANNED is not None:
        config.clear()
        config.update(PLANNED.config)
        check_local_models(config)
    else:
        # the `statistic` enum comes from the statistics registry (the file keeps none)
        with open(workflow.source_path(CONFIG_SCHEMA)) as _file:
            _schema = with_statistics(yaml.load(_file, Loader=yaml.CSafeLoader))
        check_config(config, _schema)
        for _name, _study in config["studies"].items():
            try:
                study_layout(_study)
            except ValueError as err:
                raise ConfigError(f"studies.{_name}.table: {err}") from None
            check_study_published(_name, _study, config)
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None
if PLANNED is None:
    validate(config, CONFIG_SCHEMA)
    VALIDATED = copy.deepcopy(config)  # saved with the jobs (common.smk)
