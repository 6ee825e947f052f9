# Rule finetune (workflow/rules/finetune.smk): the seeds of one (model, task, recipe, hparams).
# Rule finetune_round (adaptive.smk) too: its manifest is the job's seeds.json, its output a copy.
from blurbflow.options import CellOptions
from blurbflow.steps import finetune, run_rule
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
manifest = snakemake.params.job.get("manifest")
run_rule(
    snakemake.log[0],
    finetune,
    options=CellOptions.from_dict(snakemake.params.job["options"], where="params.job.options"),
    seeds=snakemake.params.job["seeds"],
    encoded=snakemake.input.encoded,
    data=snakemake.params.job["data"],
    out=manifest or snakemake.output[0],
    threads=snakemake.threads,
    marker=snakemake.output[0] if manifest else None,
    config=snakemake.config,  # its `tracking` key: not a param, so it re-runs nothing
)
