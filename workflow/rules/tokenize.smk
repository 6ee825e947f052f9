# Tokenize once per (tokenizer, task, input options): the input key (blurbflow.config.input_key,
# e.g. L256-markers) names the folder, so cells differing only in training options share it.


rule tokenize:
    input:
        data=multiext("resources/data/{task}/", "train.parquet", "dev.parquet", "test.parquet"),
        model=tokenize_model_input,  # forces the rule when its output is damaged (common.smk)
    output:
        directory("resources/tokenized/{model}/{task}/{input_key}"),
    params:
        tokenizer=lambda wildcards: model_source(wildcards.model),
        settings=lambda wildcards: model_settings_dict(wildcards.model),
        data=lambda wildcards, input: os.path.dirname(input.data[0]),
    priority: BEFORE_FINETUNE
    log:
        "results/logs/tokenize/{model}/{task}/{input_key}.log",
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/tokenize_task.py"
