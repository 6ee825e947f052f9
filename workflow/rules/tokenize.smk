# Tokenize once per (tokenizer, task, input options): the input key (blurbflow.config.input_key,
# e.g. L256-markers) names the folder, so cells differing only in training options share it.


rule tokenize:
    input:
        data=multiext("resources/data/{task}/", "train.parquet", "dev.parquet", "test.parquet"),
        model=lambda wildcards: model_inputs(wildcards.model),
    output:
        directory("resources/tokenized/{model}/{task}/{input_key}"),
    params:
        tokenizer=lambda wildcards: model_source(wildcards.model),
        trust=lambda wildcards: (
            "--trust-remote-code"
            if config["models"][wildcards.model].get("trust_remote_code")
            else ""
        ),
    log:
        "results/logs/tokenize/{model}/{task}/{input_key}.log",
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    shell:
        "blurbflow tokenize --task {wildcards.task} "
        "--data resources/data/{wildcards.task} --model-name {wildcards.model} "
        "--tokenizer {params.tokenizer} {params.trust} --input-key {wildcards.input_key} "
        "--out {output} > {log} 2>&1"
