# Rule tokenize (workflow/rules/tokenize.smk): encode a task once per (model, task, inputs);
# not named tokenize.py, which would shadow the standard library module of that name.
from blurbflow.steps import run_rule, tokenize
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
run_rule(
    snakemake.log[0],
    tokenize,
    task=snakemake.wildcards.task,
    data=snakemake.params.data,
    model_name=snakemake.wildcards.model,
    tokenizer=snakemake.params.tokenizer,
    settings={k: v for k, v in snakemake.params.settings.items() if k != "stage_versions"},
    input_key=snakemake.wildcards.input_key,
    out=snakemake.output[0],
)
