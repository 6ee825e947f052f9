# Rule prefetch (workflow/rules/prefetch.smk): re-download what prefetched snapshots lost.
from blurbflow.steps import prefetch_check, run_rule

run_rule(snakemake.log[0], prefetch_check, markers=list(snakemake.input.markers))
