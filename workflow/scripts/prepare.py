# Rule prepare (workflow/rules/data.smk): raw source files -> resources/data/{task}/.
from blurbflow.steps import prepare, run_rule

run_rule(
    snakemake.log[0],
    prepare,
    task=snakemake.wildcards.task,
    raw_root=snakemake.params.raw_root,
    out=snakemake.params.out,
)
