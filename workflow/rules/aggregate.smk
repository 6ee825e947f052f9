# Every job's manifest (its cells done) → every cell's result.json → results/cells.parquet →
# one table per study, and per study results/{study}.json (blurbflow.results.study_json).
STUDY_RESULTS = expand(paths.STUDY_RESULTS, study=config["studies"])
# A function, not the list: Snakemake then handles the 1,000s of manifests only for the job
# that asks for them, not in every process that reads the workflow (a SLURM job's own among
# them: benchmarks/job_start.py).
job_manifests = job_function(lambda wildcards: JOB_MANIFESTS)


rule aggregate:
    input:
        job_manifests,
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
