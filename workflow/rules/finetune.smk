# One cell = one fine-tuning run. Its full options are params, so Snakemake re-runs exactly the
# cells whose options changed; library edits alone re-queue nothing (bump `code_version`).


rule finetune:
    input:
        encoded=tokenized_dir,
        data=multiext("resources/data/{task}/", "train.parquet", "dev.parquet", "test.parquet"),
        model=lambda wildcards: model_inputs(wildcards.model),
    output:
        result="results/cells/{model}/{task}/{recipe}/{hparams}/seed{seed}/result.json",
        predictions="results/cells/{model}/{task}/{recipe}/{hparams}/seed{seed}/predictions.parquet",
    params:
        options=lambda wildcards: options_json(cell_of(wildcards).options),
    log:
        "results/logs/cells/{model}/{task}/{recipe}/{hparams}/seed{seed}.log",
    threads: 1
    resources:
        gpu=cell_resource("gpu"),
        cpus_per_task=cell_resource("cpus_per_task"),
        mem_mb=cell_resource("mem_mb"),
        runtime=cell_resource("runtime"),
    conda:
        BLURBFLOW_ENV
    shell:
        "blurbflow finetune --threads {threads} --options {params.options:q} --encoded {input.encoded} "
        "--data resources/data/{wildcards.task} --out {output.result} > {log} 2>&1"
