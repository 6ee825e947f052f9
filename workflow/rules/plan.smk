# `snakemake plan`: before a launch, the cells, jobs, GPU-hours and SLURM queue entries still to
# run, per study, per model and in total (blurbflow.plan; docs/slurm.md). No input
# and no output: it runs every time it is asked for, needs no data or model, and changes nothing.


rule plan:
    params:
        profile=os.path.join(workflow.basedir, "slurm", "profile.yaml"),  # group-components
    log:
        ".snakemake/blurbflow/plan.log",  # the table the terminal shows; results/ stays untouched
    localrule: True
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/plan.py"
