# Rule report (workflow/rules/report.smk): cells.parquet -> results/report.html.
from blurbflow.steps import report, run_rule

run_rule(
    snakemake.log[0],
    report,
    config=snakemake.config,
    config_hash=snakemake.params.config_hash,
    cells=snakemake.input.cells,
    out=snakemake.output[0],
)
