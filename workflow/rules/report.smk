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
        "{BLURBFLOW} report --config-json {params.config:q} --config-hash {params.config_hash:q} "
        "--cells {input.cells:q} --out {output:q} > {log:q} 2>&1"


onerror:
    # A failed job (--keep-going ran everything else) must not cost the report: it is built
    # from what finished, listing failed and missing cells with their errors, and left stale
    # so the next run re-runs the failed jobs (blurbflow.cli report-after-failure).
    if report_requested():
        shell(
            # the host's interpreter: this handler runs in the snakemake process, not in a job
            "mkdir -p results/logs && {BLURBFLOW_HOST} report-after-failure "
            "--config-json {CONFIG_JSON:q} --config-hash {CONFIG_HASH:q} "
            "--cells results/cells.parquet --partial {PARTIAL_CELLS:q} "
            "--out-dir results/tables --out results/report.html "
            "> results/logs/report-after-failure.log 2>&1"
        )
        print("blurbflow: some jobs failed; results/report.html lists them with their errors")
