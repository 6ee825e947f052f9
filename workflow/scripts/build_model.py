# Rule build_demo_model (workflow/rules/model.smk): the demo's tokenizer and tiny BERT.
from blurbflow.steps import build_model, run_rule

run_rule(
    snakemake.log[0],
    build_model,
    spec=snakemake.params.spec,
    corpus=list(snakemake.input.corpus),
    out=snakemake.output[0],
)
