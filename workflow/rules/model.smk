# Models the pipeline builds itself (the demo's tiny in-domain BERT); hub models need no rule.


rule build_demo_model:
    input:
        corpus=corpus_files,
        rerun=model_rerun,  # its folder once damaged: the rerun stamp (common.smk)
    output:
        directory(paths.BUILT_MODEL),
    params:
        spec=lambda wildcards: versioned(
            dict(sorted(config["models"][wildcards.model].items())), stage_versions.build_versions()
        ),
    threads: 2
    priority: BEFORE_FINETUNE
    log:
        paths.MODEL_LOG,
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/build_model.py"
