# Validate the config before anything else: readable unknown-key and bad-value errors first (key
# path + what is expected), then the JSON
# schema (types, ranges, defaults) through Snakemake's `validate`.
import yaml

from blurbflow.config import ConfigError, check_keys, check_values

CONFIG_SCHEMA = "../schemas/config.schema.yaml"

try:
    schema = yaml.safe_load(open(workflow.source_path(CONFIG_SCHEMA)))
    check_keys(config, schema)
    check_values(config, schema)
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None
validate(config, CONFIG_SCHEMA)
