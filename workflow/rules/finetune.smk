# One job = the seeds of one (model, task, recipe, hparams), each a cell with its own folder
# seed{N}/ (result.json, predictions.parquet, checkpoint). Options and seeds are params, so
# Snakemake re-runs exactly the jobs whose options or seeds changed (or whose seed files changed
# since: their rerun stamp, common.smk); inside, a seed whose result verifies for these options
# and this identity is kept (blurbflow.train.job), so adding a seed trains that seed only.
# A fix in a parser or encoder re-runs its stage (blurbflow.stage_versions); the job then keeps
# every seed whose inputs came out byte-identical. A recipe with `init_from` also
# takes the source job's seeds.json: a re-run source re-runs it (blurbflow.config.init_from).


rule finetune:
    input:
        unpack(finetune_inputs),  # tokenized data, model, [init_from source], [rerun stamp]
    output:
        paths.JOB_MANIFEST,
    params:
        job=finetune_params,  # options, seeds and data folder (common.smk)
    log:
        paths.JOB_LOG,
    threads: 1
    priority: cell_priority  # longest first (common.smk)
    group:
        cell_group
    resources:
        **TMPDIR,  # as Snakemake's default, without its evaluation per job (common.smk)
        gpu_slot=1,  # one at a time inside a submission (slurm/profile.yaml); not read by SLURM
        cpus_per_task=cell_resource("cpus_per_task"),
        mem_mb=cell_resource("mem_mb"),
        runtime=cell_resource("runtime"),
        **SLURM_GPU,  # its GPU (gpu=1 or gres), partition, qos, constraint, signal (common.smk)
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/finetune.py"
