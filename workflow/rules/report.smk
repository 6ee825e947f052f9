# One self-contained HTML report (DESIGN §8).


rule report:
    input:
        cells="results/cells.parquet",
        tables=TABLE_FILES,
    output:
        "results/report.html",
    params:
        config=CONFIG_JSON,
        config_hash=CONFIG_HASH,
    log:
        "results/logs/report.log",
    conda:
        BLURBFLOW_ENV
    shell:
        "blurbflow report --config-json {params.config:q} --config-hash {params.config_hash} "
        "--cells {input.cells} --out {output} > {log} 2>&1"
