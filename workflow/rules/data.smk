# Raw sources → prepared parquet in the uniform schema (docs/data.md).


if DATA_SOURCE == "generated":

    rule generate_raw:
        output:
            directory(paths.RAW),
        params:
            seed=config.get("data", {}).get("generated_seed", 0),
        priority: BEFORE_FINETUNE
        log:
            paths.RAW_LOG,
        resources:
            **SLURM_CPU,
        conda:
            BLURBFLOW_ENV
        script:
            "../scripts/generate.py"

else:

    # Downloads run where snakemake runs (the login node): compute nodes may be offline.
    localrules:
        fetch_raw,

    rule fetch_raw:
        output:
            directory(paths.RAW),
        params:
            mirror=config.get("mirror", ""),  # empty: no mirror
            manual=config.get("data", {}).get("bioasq_dir", "resources/manual/bioasq"),
        retries: 1
        priority: BEFORE_FINETUNE
        log:
            paths.RAW_LOG,
        conda:
            BLURBFLOW_ENV
        script:
            "../scripts/fetch.py"


rule prepare:
    input:
        prepare_input,  # raw files; the rerun stamp once its output is damaged (common.smk)
    output:
        multiext(f"{paths.DATA}/", "train.parquet", "dev.parquet", "test.parquet", "stats.json"),
    params:
        raw_root="resources/raw",  # every source under it; a task of its own reads its files
        out=lambda wildcards, output: os.path.dirname(output[0]),
        task=lambda wildcards: definition(wildcards.task),  # own task: its entry; stage versions
    priority: BEFORE_FINETUNE
    log:
        paths.PREPARE_LOG,
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/prepare.py"
