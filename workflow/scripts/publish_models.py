# Rule publish_study (workflow/rules/export.smk): results/models/{study}/ -> the Hugging Face Hub
# (blurbflow.export.publish; the token is huggingface_hub's own, never passed or logged).
from blurbflow.export.publish import publish_study
from blurbflow.steps import run_rule
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)
run_rule(
    snakemake.log[0],
    publish_study,
    config=snakemake.config,
    study=snakemake.wildcards.study,
    export_dir=snakemake.input.models,
    out=snakemake.output[0],
    dry_run=snakemake.params.dry_run,
)
