# Rule export_study (workflow/rules/export.smk): cells.parquet -> results/models/{study}/, per
# table entry the chosen seed's kept model with the entry's card (blurbflow.export.folder).
from blurbflow.export.folder import export_study
from blurbflow.steps import run_rule
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
run_rule(
    snakemake.log[0],
    export_study,
    config=snakemake.config,
    study=snakemake.wildcards.study,
    cells=snakemake.input.cells,
    out=snakemake.output[0],
)
