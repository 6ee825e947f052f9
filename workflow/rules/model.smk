# Models the pipeline builds itself (the demo's tiny in-domain BERT); hub models need no rule.


rule build_demo_model:
    input:
        corpus_files,
    output:
        directory("resources/models/{model}"),
    params:
        spec=lambda wildcards: json.dumps(config["models"][wildcards.model], sort_keys=True),
    threads: 2
    log:
        "results/logs/models/{model}.log",
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    shell:
        "{BLURBFLOW} build-model --spec {params.spec:q} --out {output:q} {input:q} > {log:q} 2>&1"
