# A stage re-made for a version bump that writes the content its fine-tuning jobs computed from
# starts none of them (blurbflow.stage_bytes; docs/extending.md). The jobs reading a re-made
# folder wait on this checkpoint, which runs after every re-made stage and puts back the dates
# of the folders whose content is unchanged; Snakemake then looks at the jobs again and runs
# only those whose folder changed. Planned by the main process, from the folders whose stage
# versions changed (common.smk `OUTDATED_STAGES`): with none, no job waits and nothing is read.
from blurbflow.stage_bytes import check_plan, rerun_folders, visible_dates, visible_files

RERUN_FOLDERS = rerun_folders(JOBS, config, OUTDATED_STAGES) if OUTDATED_STAGES else {}
WAITING_JOBS, STAGE_READERS, STAGE_INPUTS = check_plan(JOBS, config, RERUN_FOLDERS)


checkpoint stage_bytes:
    input:
        # what the re-made stages write: prepare's files, tokenize's and build's folders
        [
            path if kind == "data" else folder
            for folder, kind in RERUN_FOLDERS.items()
            for path in visible_files(folder, kind)
        ],
    output:
        paths.STAGE_BYTES,
    params:
        folders=RERUN_FOLDERS,
        readers=STAGE_READERS,
        inputs=STAGE_INPUTS,
        dates=visible_dates(RERUN_FOLDERS),  # before the stages re-run
    log:
        "results/logs/stage-bytes.log",
    localrule: True
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/stage_bytes.py"
