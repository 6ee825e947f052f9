# Checkpoint stage_bytes (workflow/rules/stage_bytes.smk): after the stages re-made for a version
# bump, the dates of the folders whose content their jobs already computed from go back.
from blurbflow.steps import run_rule, stage_bytes

run_rule(
    snakemake.log[0],
    stage_bytes,
    folders=snakemake.params.folders,
    readers=snakemake.params.readers,
    inputs=snakemake.params.inputs,
    dates=snakemake.params.dates,
    out=snakemake.output[0],
)
