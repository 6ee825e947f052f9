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
    # what finished; failed and missing cells are listed in it with their errors. Snakemake must
    # still see the aggregation as stale, or it would never re-run the failed jobs behind it:
    # results/cells.parquet is removed (the partial table is cells.partial.parquet) and the
    # report is dated 1970-01-02 (older than the tables it reads; Snakemake reads an mtime of 0
    # as none), so the next run rebuilds it.
    if report_requested():
        shell(
            "mkdir -p results/logs && rm -f results/cells.parquet && "
            f"blurbflow aggregate --config-json {CONFIG_JSON} --out {PARTIAL_CELLS} && "
            f"blurbflow tables --config-json {CONFIG_JSON} --cells {PARTIAL_CELLS} "
            "--out-dir results/tables && "
            f"blurbflow report --config-json {CONFIG_JSON} --config-hash {CONFIG_HASH} "
            f"--cells {PARTIAL_CELLS} --out results/report.html "
            "> results/logs/report-after-failure.log 2>&1 && touch -d @86400 results/report.html"
        )
        print("blurbflow: some jobs failed; results/report.html lists them with their errors")
