# Rule prefetch_model (workflow/rules/prefetch.smk): a hub model's snapshot and its marker.
from blurbflow.steps import prefetch, run_rule

run_rule(
    snakemake.log[0],
    prefetch,
    hub_id=snakemake.params.hub_id,
    revision=snakemake.params.revision,
    cache_dir=snakemake.params.cache,
    out=snakemake.output[0],
)
