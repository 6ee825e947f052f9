# Checkpoint adaptive_round (workflow/rules/adaptive.smk): a study's round of adaptive seeds.
from blurbflow.steps import adaptive_round, run_rule
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
run_rule(
    snakemake.log[0],
    adaptive_round,
    config=snakemake.config,
    study=snakemake.wildcards.study,
    round_=int(snakemake.wildcards.round),
    previous=snakemake.input.get("previous"),
    out=snakemake.output[0],
)
