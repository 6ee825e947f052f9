# Every job's manifest (its cells done) → every cell's result.json → results/cells.parquet →
# one table per study, and per study results/{study}.json (blurbflow.results.study_json).
STUDY_RESULTS = expand(paths.STUDY_RESULTS, study=config["studies"])


rule aggregate:
    input:
        JOB_MANIFESTS,
        rounds=adaptive_rounds,  # adaptive studies' last rounds: the seeds each cell has
        markers=adaptive_markers,  # (adaptive.smk)
    output:
        paths.CELLS_TABLE,
    params:
        config_hash=CONFIG_HASH,  # the script reads the config itself; any edit re-aggregates
    log:
        "results/logs/aggregate.log",
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/aggregate.py"


rule tables:
    input:
        paths.CELLS_TABLE,
    output:
        table_reports(TABLE_FILES),  # `snakemake --report` carries them
        results=STUDY_RESULTS,
    params:
        config_hash=CONFIG_HASH,
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
        results_dir=lambda wildcards, output: os.path.dirname(output.results[0]),
    log:
        "results/logs/tables.log",
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/tables.py"
