# Rule select_reference (workflow/rules/select.smk): the grid point of a study's reference models.
from blurbflow.results.handover import select_for_models
from blurbflow.steps import run_rule
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
run_rule(
    snakemake.log[0],
    select_for_models,
    sources=snakemake.params.sources,
    reference=snakemake.params.models,
    select=snakemake.params.select,
    out=snakemake.output[0],
)
