# Rule report (workflow/rules/report.smk): cells.parquet -> results/report.html.
from blurbflow.steps import report, run_rule
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
run_rule(
    snakemake.log[0],
    report,
    config=snakemake.config,
    config_hash=snakemake.params.config_hash,
    cells=snakemake.input.cells,
    out=snakemake.output[0],
)
