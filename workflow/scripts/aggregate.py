# Rule aggregate (workflow/rules/aggregate.smk): every cell's result.json -> cells.parquet.
from blurbflow.steps import aggregate, run_rule
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
run_rule(
    snakemake.log[0],
    aggregate,
    config=snakemake.config,
    out=snakemake.output[0],
    rounds=list(snakemake.input.get("rounds", [])),  # adaptive studies' last rounds
)
