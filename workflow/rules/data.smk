# Raw sources → prepared parquet in the uniform schema (DESIGN §4).


if DATA_SOURCE == "generated":

    rule generate_raw:
        output:
            directory("resources/raw/{source}"),
        params:
            seed=config.get("data", {}).get("generated_seed", 0),
        log:
            "results/logs/raw/{source}.log",
        resources:
            **SLURM_CPU,
        conda:
            BLURBFLOW_ENV
        shell:
            "blurbflow generate --source {wildcards.source} --seed {params.seed} "
            "--out {output} > {log} 2>&1"

else:

    # Downloads run where snakemake runs (the login node): compute nodes may be offline.
    localrules:
        fetch_raw,

    rule fetch_raw:
        output:
            directory("resources/raw/{source}"),
        params:
            mirror=lambda wildcards: f"--mirror {config['mirror']}" if config.get("mirror") else "",
            manual=config.get("data", {}).get("bioasq_dir", "resources/manual/bioasq"),
        retries: 1
        log:
            "results/logs/raw/{source}.log",
        conda:
            BLURBFLOW_ENV
        shell:
            "blurbflow fetch --source {wildcards.source} {params.mirror} "
            "--manual-dir {params.manual} --out {output} > {log} 2>&1"


rule prepare:
    input:
        lambda wildcards: [f"resources/raw/{s}" for s in TASKS[wildcards.task].sources],
    output:
        multiext(
            "resources/data/{task}/", "train.parquet", "dev.parquet", "test.parquet", "stats.json"
        ),
    log:
        "results/logs/prepare/{task}.log",
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    shell:
        "blurbflow prepare --task {wildcards.task} --raw-root resources/raw "
        "--out resources/data/{wildcards.task} > {log} 2>&1"
