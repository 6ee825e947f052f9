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
    # A failed job (--keep-going ran everything else) must not cost the report: it is built
    # from what finished, listing failed and missing cells with their errors, and left stale
    # so the next run re-runs the failed jobs (blurbflow.cli report-after-failure).
    if report_requested():
        shell(
            "mkdir -p results/logs && blurbflow report-after-failure "
            f"--config-json {CONFIG_JSON} --config-hash {CONFIG_HASH} "
            f"--cells results/cells.parquet --partial {PARTIAL_CELLS} "
            "--out-dir results/tables --out results/report.html "
            "> results/logs/report-after-failure.log 2>&1"
        )
        print("blurbflow: some jobs failed; results/report.html lists them with their errors")
