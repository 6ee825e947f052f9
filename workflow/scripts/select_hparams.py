# Rule select_hparams (workflow/rules/select.smk): the setting a `hparams_from` recipe takes.
from blurbflow.results.handover import select_for_final
from blurbflow.steps import run_rule
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
run_rule(
    snakemake.log[0],
    select_for_final,
    sources=snakemake.params.sources,
    recipes=snakemake.params.recipes,
    out=snakemake.output[0],
)
