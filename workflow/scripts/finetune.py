# Rule finetune (workflow/rules/finetune.smk): the seeds of one (model, task, recipe, hparams).
from blurbflow.options import CellOptions
from blurbflow.steps import finetune, run_rule
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
run_rule(
    snakemake.log[0],
    finetune,
    options=CellOptions.from_dict(snakemake.params.job["options"], where="params.job.options"),
    seeds=snakemake.params.job["seeds"],
    encoded=snakemake.input.encoded,
    data=snakemake.params.job["data"],
    out=snakemake.output[0],
    threads=snakemake.threads,
)
