# Rule prepare (workflow/rules/data.smk): raw source files -> resources/data/{task}/.
from blurbflow.steps import prepare, run_rule
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
run_rule(
    snakemake.log[0],
    prepare,
    task=snakemake.wildcards.task,
    raw_root=snakemake.params.raw_root,
    out=snakemake.params.out,
)
