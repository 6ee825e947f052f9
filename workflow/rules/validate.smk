# Validate the config before anything else, each error naming the key path and the fix: unknown
# keys, unsafe names (they become folders and command arguments), non-finite numbers, the JSON
# schema, references to models/tasks/recipes, bounded sizes, safe paths, missing local models
# (blurbflow.validate); then Snakemake's `validate` fills the schema's defaults.
import yaml

from blurbflow.validate import ConfigError, check_config

CONFIG_SCHEMA = "../schemas/config.schema.yaml"

try:
    check_config(config, yaml.safe_load(open(workflow.source_path(CONFIG_SCHEMA))))
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None
validate(config, CONFIG_SCHEMA)
