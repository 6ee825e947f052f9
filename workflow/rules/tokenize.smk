# Tokenize once per (tokenizer, task, input options): the input key (blurbflow.config.input_key,
# e.g. L256-markers) names the folder, so cells differing only in training options share it.
# Its functions declare their parameters once (common.smk `job_function`): 100s of jobs.
tokenize_model = job_function(lambda wildcards: model_inputs(wildcards.model))
tokenize_source = job_function(lambda wildcards: model_source(wildcards.model))
tokenize_data = job_function(lambda wildcards, input: os.path.dirname(input.data[0]))


rule tokenize:
    input:
        data=multiext(f"{paths.DATA}/", "train.parquet", "dev.parquet", "test.parquet"),
        model=tokenize_model,
        rerun=tokenize_rerun,  # its output once damaged: the rerun stamp (common.smk)
    output:
        directory(paths.TOKENIZED),
    params:
        tokenizer=tokenize_source,
        settings=tokenize_settings,  # the model's settings, the encoder's stage versions
        data=tokenize_data,
    priority: BEFORE_FINETUNE
    log:
        paths.TOKENIZE_LOG,
    resources:
        **TMPDIR,  # Snakemake's default, evaluated once (common.smk)
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/tokenize_task.py"
