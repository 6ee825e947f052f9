# Models the pipeline builds itself (the demo's tiny in-domain BERT); hub models need no rule.


rule build_demo_model:
    input:
        corpus_files,
    output:
        directory("resources/models/{model}"),
    params:
        spec=lambda wildcards: dict(sorted(config["models"][wildcards.model].items())),
    threads: 2
    priority: BEFORE_FINETUNE
    log:
        "results/logs/models/{model}.log",
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/build_model.py"
