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
            "{BLURBFLOW} generate --source {wildcards.source:q} --seed {params.seed:q} "
            "--out {output:q} > {log:q} 2>&1"

else:

    # Downloads run where snakemake runs (the login node): compute nodes may be offline.
    localrules:
        fetch_raw,

    rule fetch_raw:
        output:
            directory("resources/raw/{source}"),
        params:
            mirror=config.get("mirror", ""),  # empty: no mirror
            manual=config.get("data", {}).get("bioasq_dir", "resources/manual/bioasq"),
        retries: 1
        log:
            "results/logs/raw/{source}.log",
        conda:
            BLURBFLOW_ENV
        shell:
            "{BLURBFLOW} fetch --source {wildcards.source:q} --mirror={params.mirror:q} "
            "--manual-dir {params.manual:q} --out {output:q} > {log:q} 2>&1"


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
        "{BLURBFLOW} prepare --task {wildcards.task:q} --raw-root resources/raw "
        "--out resources/data/{wildcards.task:q} > {log:q} 2>&1"
