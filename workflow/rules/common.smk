# Shared state: the validated config expanded into cells, and lookups the rules use.
import base64
import json

from blurbflow.config import (
    ConfigError,
    check_names,
    config_hash,
    expand_cells,
    input_key,
    options_json,
)
from blurbflow.cluster import cell_resources
from blurbflow.tasks import TASKS

try:
    check_names(config)
    CELLS = expand_cells(config)
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None

STUDY_TASKS = sorted({cell.task for cell in CELLS.values()})
CELL_RESULTS = [f"{path}/result.json" for path in CELLS]
TABLE_FILES = expand(
    "results/tables/{study}.{ext}", study=config["studies"], ext=["csv", "md", "tex"]
)
DATA_SOURCE = config.get("data", {}).get("source", "download")
# The whole config as one param: aggregation re-runs when any study definition changes.
# base64: Snakemake formats shell strings, so braces inside config text must not reach it.
CONFIG_B64 = base64.b64encode(json.dumps(config, sort_keys=True, default=str).encode())
CONFIG_JSON = f"b64:{CONFIG_B64.decode()}"
CONFIG_HASH = config_hash(config)


wildcard_constraints:
    model="[^/]+",
    task="[^/]+",
    recipe="[^/]+",
    hparams="[^/]+",
    seed=r"\d+",
    input_key=r"L\d+(-[A-Za-z+]+)*",


def cell_of(wildcards):
    key = (
        f"results/cells/{wildcards.model}/{wildcards.task}/{wildcards.recipe}/"
        f"{wildcards.hparams}/seed{wildcards.seed}"
    )
    return CELLS[key]


def model_inputs(model):
    """A model built by the pipeline is a file dependency; hub models are fetched by `prefetch`."""
    spec = config["models"][model]
    return [spec["path"]] if spec.get("build") else []


def corpus_files(wildcards):
    """The demo model's pre-training corpus: every study task's training set."""
    return expand("resources/data/{task}/train.parquet", task=STUDY_TASKS)


def tokenized_dir(wildcards):
    cell = cell_of(wildcards)
    return f"resources/tokenized/{cell.model}/{cell.task}/{input_key(cell.task, cell.options)}"


def cell_resource(name):
    """A resource callable for the finetune rule (blurbflow.cluster.cell_resources)."""

    def resource(wildcards, attempt):
        cell = cell_of(wildcards)
        size = config["models"][cell.model].get("size", "base")
        return cell_resources(cell.options, size, attempt, config.get("resources"))[name]

    return resource


def model_source(model):
    spec = config["models"][model]
    return spec.get("path") or spec["hub_id"]


# Software of every rule (used with --software-deployment-method conda).
BLURBFLOW_ENV = "../../envs/blurbflow.yaml"
