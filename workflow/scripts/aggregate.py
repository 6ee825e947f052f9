# Rule aggregate (workflow/rules/aggregate.smk): every cell's result.json -> cells.parquet.
from blurbflow.steps import aggregate, run_rule

run_rule(snakemake.log[0], aggregate, config=snakemake.config, out=snakemake.output[0])
