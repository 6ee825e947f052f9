# Every cell's result.json → results/cells.parquet → one table per study.


rule aggregate:
    input:
        CELL_RESULTS,
    output:
        "results/cells.parquet",
    params:
        config=CONFIG_JSON,
    log:
        "results/logs/aggregate.log",
    conda:
        BLURBFLOW_ENV
    shell:
        "blurbflow aggregate --config-json {params.config:q} --out {output} > {log} 2>&1"


rule tables:
    input:
        "results/cells.parquet",
    output:
        TABLE_FILES,
    params:
        config=CONFIG_JSON,
    log:
        "results/logs/tables.log",
    conda:
        BLURBFLOW_ENV
    shell:
        "blurbflow tables --config-json {params.config:q} --cells {input} "
        "--out-dir results/tables > {log} 2>&1"
