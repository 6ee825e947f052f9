# Rule tables (workflow/rules/aggregate.smk): cells.parquet -> per study its tables and
# results/{study}.json.
from blurbflow.steps import run_rule, tables
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
run_rule(
    snakemake.log[0],
    tables,
    config=snakemake.config,
    cells=snakemake.input[0],
    out_dir=snakemake.params.out_dir,
    results_dir=snakemake.params.results_dir,
)
