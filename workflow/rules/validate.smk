# Validate the config before anything else: readable unknown-key errors first, then the JSON
# schema (types, ranges, defaults) through Snakemake's `validate`.
import yaml

from blurbflow.config import ConfigError, check_keys

CONFIG_SCHEMA = "../schemas/config.schema.yaml"

try:
    check_keys(config, yaml.safe_load(open(workflow.source_path(CONFIG_SCHEMA))))
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None
validate(config, CONFIG_SCHEMA)
