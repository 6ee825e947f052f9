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
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    shell:
        "blurbflow report --config-json {params.config:q} --config-hash {params.config_hash} "
        "--cells {input.cells} --out {output} > {log} 2>&1"


onerror:
    # A failed job (--keep-going ran everything else) must not cost the report: build it from
    # what finished; failed and missing cells are listed in it with their errors.
    if report_requested():
        shell(
            "mkdir -p results/logs && "
            f"blurbflow aggregate --config-json {CONFIG_JSON} --out results/cells.parquet && "
            f"blurbflow tables --config-json {CONFIG_JSON} --cells results/cells.parquet "
            "--out-dir results/tables && "
            f"blurbflow report --config-json {CONFIG_JSON} --config-hash {CONFIG_HASH} "
            "--cells results/cells.parquet --out results/report.html "
            "> results/logs/report-after-failure.log 2>&1"
        )
        print("blurbflow: some jobs failed; results/report.html lists them with their errors")
