# `snakemake prefetch` on a login node: every dataset and every hub model's weights, so that the
# jobs on offline compute nodes (HF_HUB_OFFLINE=1) find everything. Fine-tuning depends on it, so
# `all` prefetches first as well; downloads always run where snakemake runs (localrules).


localrules:
    prefetch_model,
    prefetch,


rule prefetch_model:
    output:
        f"{HF_CACHE}/.prefetched/{{model}}.json",
    params:
        hub_id=lambda wildcards: config["models"][wildcards.model]["hub_id"],
        revision=lambda wildcards: config["models"][wildcards.model].get("revision", "main"),
        cache=lambda wildcards, output: os.path.dirname(os.path.dirname(output[0])),
    retries: 1
    log:
        "results/logs/prefetch/{model}.log",
    conda:
        BLURBFLOW_ENV
    shell:
        "HF_HUB_OFFLINE=0 blurbflow prefetch --model-name {wildcards.model} "
        "--hub-id {params.hub_id} --revision {params.revision} --cache-dir {params.cache} "
        "--out {output} > {log} 2>&1"


rule prefetch:
    input:
        [path for model in STUDY_MODELS for path in model_inputs(model)],
        expand("resources/raw/{source}", source=STUDY_SOURCES),
