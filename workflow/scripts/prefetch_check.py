# Rule prefetch (workflow/rules/prefetch.smk): re-download what prefetched models lost (hub
# snapshots at their recorded commit, URL models from their pinned archive).
from blurbflow.model_urls import check_markers
from blurbflow.steps import run_rule

run_rule(snakemake.log[0], check_markers, markers=list(snakemake.input.markers))
