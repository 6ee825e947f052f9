# Rule prefetch_url (workflow/rules/prefetch.smk): a URL model's archive, verified and unpacked.
from blurbflow.model_urls import prefetch_url
from blurbflow.steps import run_rule

run_rule(
    snakemake.log[0],
    prefetch_url,
    model=snakemake.params.model,
    url=snakemake.params.url,
    sha256=snakemake.params.sha256,
    subfolder=snakemake.params.subfolder,
    cache_dir=snakemake.params.cache,
    out=snakemake.output[0],
)
