# Rule fetch_raw (workflow/rules/data.smk): download, extract and verify a raw source.
from blurbflow.steps import fetch, run_rule

run_rule(
    snakemake.log[0],
    fetch,
    source=snakemake.wildcards.source,
    mirror=snakemake.params.mirror,
    manual_dir=snakemake.params.manual,
    out=snakemake.output[0],
)
