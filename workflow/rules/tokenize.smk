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
        settings=lambda wildcards: model_settings_json(wildcards.model),
    log:
        "results/logs/tokenize/{model}/{task}/{input_key}.log",
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    shell:
        "{BLURBFLOW} tokenize --task {wildcards.task:q} "
        "--data resources/data/{wildcards.task:q} --model-name {wildcards.model:q} "
        "--tokenizer {params.tokenizer:q} --settings {params.settings:q} "
        "--input-key {wildcards.input_key:q} "
        "--out {output:q} > {log:q} 2>&1"
