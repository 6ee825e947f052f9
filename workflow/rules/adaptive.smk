# Adaptive seeds (docs/seeds.md "In the workflow"): a study with `seeds: {adaptive: …}` runs in
# rounds. Round k of a job is rule finetune_round's marker seeds-n{n}.json (n: the seeds it then
# has; the job keeps its finished seeds and trains the new ones, its manifest stays seeds.json).
# Checkpoint adaptive_round decides the study's comparisons on round k's markers and writes
# results/adaptive/{study}/round{k}.json; the next round's markers and the aggregation ask for
# what it says, so `snakemake all` runs the rounds by itself and, once done, asks for nothing.
include: "adaptive_common.smk"


# finetune's rule for one round: its inputs and the round before, the marker, the round's seeds
use rule finetune as finetune_round with:
    input:
        unpack(round_inputs),  # finetune's inputs and the job's round before
    output:
        paths.ROUND_MARKER,
    params:
        job=round_params,  # finetune's, with the round's seeds 1..n and the job's manifest
    log:
        paths.ROUND_LOG,
    wildcard_constraints:
        n=r"\d+",


checkpoint adaptive_round:
    input:
        unpack(adaptive_round_inputs),  # the round's markers, the round before's decisions
    output:
        ROUND,
    params:
        # the study as configured: a changed plan, recipe list or delta decides again
        study=lambda w: config["studies"][w.study],
    log:
        "results/logs/adaptive/{study}/round{round}.log",
    wildcard_constraints:
        round=r"\d+",
    priority: BEFORE_FINETUNE
    localrule: True
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/adaptive_round.py"
