# Rule generate_raw (workflow/rules/data.smk): a synthetic raw source in its real format.
from blurbflow.steps import generate, run_rule

run_rule(
    snakemake.log[0],
    generate,
    source=snakemake.wildcards.source,
    seed=snakemake.params.seed,
    out=snakemake.output[0],
)
