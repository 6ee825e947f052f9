# Every job's manifest (its cells done) → every cell's result.json → results/cells.parquet →
# one table per study.


rule aggregate:
    input:
        JOB_MANIFESTS,
    output:
        "results/cells.parquet",
    params:
        config=CONFIG_JSON,
    log:
        "results/logs/aggregate.log",
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    shell:
        "{BLURBFLOW} aggregate --config-json {params.config:q} --out {output:q} > {log:q} 2>&1"


rule tables:
    input:
        "results/cells.parquet",
    output:
        TABLE_FILES,
    params:
        config=CONFIG_JSON,
    log:
        "results/logs/tables.log",
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    shell:
        "{BLURBFLOW} tables --config-json {params.config:q} --cells {input:q} "
        "--out-dir results/tables > {log:q} 2>&1"
