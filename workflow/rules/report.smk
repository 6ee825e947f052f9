# One self-contained HTML report (docs/results.md).


rule report:
    input:
        cells=paths.CELLS_TABLE,
        tables=TABLE_FILES,
    output:
        report(paths.REPORT, caption="../report/report.rst", category="Report"),
    params:
        config_hash=CONFIG_HASH,
    log:
        "results/logs/report.log",
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/report.py"


onerror:
    # A failed job (--keep-going ran everything else) must not cost the report: it is built
    # from what finished, listing failed and missing cells with their errors, and left stale
    # so the next run re-runs the failed jobs (blurbflow.steps.report_after_failure).
    if report_requested():
        from blurbflow.steps import report_after_failure, run_in_process

        run_in_process(
            "results/logs/report-after-failure.log",
            report_after_failure,
            config=config,
            config_hash=CONFIG_HASH,
            cells=paths.CELLS_TABLE,
            partial=PARTIAL_CELLS,
            out_dir=paths.TABLES,
            out=paths.REPORT,
        )
        print("blurbflow: some jobs failed; results/report.html lists them with their errors")
