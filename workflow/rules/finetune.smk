# One job = the seeds of one (model, task, recipe, hparams), each a cell with its own folder
# seed{N}/ (result.json, predictions.parquet, checkpoint). Options and seeds are params, so
# Snakemake re-runs exactly the jobs whose options or seeds changed (or whose seed files changed
# since: the `recheck` input); inside, a seed whose result verifies for these options and this
# identity is kept (blurbflow.train.job), so adding a seed trains that seed only. Library edits
# alone re-queue nothing (bump `code_version`).


rule finetune:
    input:
        encoded=tokenized_dir,
        data=multiext("resources/data/{task}/", "train.parquet", "dev.parquet", "test.parquet"),
        model=lambda wildcards: model_inputs(wildcards.model),
        recheck=recheck,  # no file: forces the job when its seed files changed (common.smk)
    output:
        "results/cells/{model}/{task}/{recipe}/{hparams}/seeds.json",
    params:
        options=lambda wildcards: options_json(job_of(wildcards).options),
        seeds=lambda wildcards: ",".join(map(str, job_of(wildcards).seeds)),
    log:
        "results/logs/cells/{model}/{task}/{recipe}/{hparams}.log",
    threads: 1
    group:
        cell_group
    resources:
        gpu=cell_resource("gpu"),
        cpus_per_task=cell_resource("cpus_per_task"),
        mem_mb=cell_resource("mem_mb"),
        runtime=cell_resource("runtime"),
        **SLURM_GPU,
    conda:
        BLURBFLOW_ENV
    shell:
        "{BLURBFLOW} finetune --threads {threads} --options {params.options:q} "
        "--seeds {params.seeds:q} --encoded {input.encoded:q} "
        "--data resources/data/{wildcards.task:q} --out {output:q} > {log:q} 2>&1"
