# `snakemake prefetch` on a login node: every dataset and every hub model's weights, so that the
# jobs on offline compute nodes (HF_HUB_OFFLINE=1) find everything. Fine-tuning depends on the
# markers, so `all` prefetches what was never fetched as well; downloads always run where
# snakemake runs (localrules). A marker is keyed by hub id + revision (HUB_MARKERS) and records
# the commit the revision resolved to; every job loads that commit's snapshot. A model given by
# URL (`url:` + `sha256:`) has its own rule, prefetch_url: its marker `url--{sha256}.json` is
# written once the archive matched its pin and its model folder is unpacked
# (blurbflow.model_urls). Hub markers always hold an `@`, URL markers never.


localrules:
    prefetch_model,
    prefetch_url,
    prefetch,


rule prefetch_model:
    output:
        f"{HF_CACHE}/.prefetched/{{marker,[^/]+@[^/]+}}.json",
    params:
        hub_id=lambda wildcards: HUB_MARKERS[wildcards.marker][0],
        revision=lambda wildcards: HUB_MARKERS[wildcards.marker][1],
        cache=lambda wildcards, output: os.path.dirname(os.path.dirname(output[0])),
    retries: 1
    priority: BEFORE_FINETUNE
    log:
        "results/logs/prefetch/{marker}.log",
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/prefetch.py"


rule prefetch_url:
    output:
        f"{HF_CACHE}/.prefetched/url--{{archive,[^/@]+}}.json",
    params:
        model=lambda wildcards: URL_MARKERS[f"url--{wildcards.archive}"][0],
        url=lambda wildcards: URL_MARKERS[f"url--{wildcards.archive}"][1]["url"],
        sha256=lambda wildcards: URL_MARKERS[f"url--{wildcards.archive}"][1].get("sha256"),
        subfolder=lambda wildcards: URL_MARKERS[f"url--{wildcards.archive}"][1].get("subfolder"),
        cache=lambda wildcards, output: os.path.dirname(os.path.dirname(output[0])),
    priority: BEFORE_FINETUNE
    log:
        "results/logs/prefetch/url--{archive}.log",
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/prefetch_url.py"


# No output, so it runs whenever it is asked for: it checks every marker's snapshot and
# downloads again, at the recorded commit, what a cleaned or damaged cache lost (a marker that
# is unchanged keeps its date, so nothing downstream re-runs).
rule prefetch:
    input:
        markers=sorted({marker for model in STUDY_MODELS for marker in hub_markers(model)}),
        raw=expand(paths.RAW, source=STUDY_SOURCES),
    log:
        "results/logs/prefetch/check.log",
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/prefetch_check.py"
