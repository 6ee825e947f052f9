# Rule tables (workflow/rules/aggregate.smk): cells.parquet -> one table per study.
from blurbflow.steps import run_rule, tables

run_rule(
    snakemake.log[0],
    tables,
    config=snakemake.config,
    cells=snakemake.input[0],
    out_dir=snakemake.params.out_dir,
)
