# State and input functions of adaptive seeds' rules (adaptive.smk; docs/seeds.md).
import json

from blurbflow.config.study_plan import adaptive_counts, adaptive_spec

# (model, task, recipe) folder -> (study, seeds per round) of each adaptive cell that runs
_RUN = {path.rsplit("/", 1)[0] for path in JOBS}
ADAPTIVE_CELLS = {
    paths.RECIPE.format(model=model, task=task, recipe=recipe): (name, adaptive_counts(spec))
    for name, study in config["studies"].items()
    for task in study["tasks"]
    if (spec := adaptive_spec(study, task)) is not None
    for model in study["models"]
    for recipe in study["recipes"]
    if paths.RECIPE.format(model=model, task=task, recipe=recipe) in _RUN
}
ADAPTIVE_STUDIES = sorted({name for name, _ in ADAPTIVE_CELLS.values()})
ADAPTIVE_JOBS = [job for path, job in JOBS.items() if path.rsplit("/", 1)[0] in ADAPTIVE_CELLS]
# the fixed-seed jobs' manifests: aggregation and `snakemake cells` ask for these
JOB_MANIFESTS = [m for m in JOB_MANIFESTS if m.rsplit("/", 2)[0] not in ADAPTIVE_CELLS]
MARKER = paths.ROUND_MARKER
ROUND = paths.ADAPTIVE_ROUND


def round_markers(study, counts):
    """The markers of a study's jobs at `counts` ((model/task/recipe) -> seeds)."""
    return [
        f"{job.path}/seeds-n{counts[f'{job.model}/{job.task}/{job.recipe}']}.json"
        for job in ADAPTIVE_JOBS
        if ADAPTIVE_CELLS[job.path.rsplit("/", 1)[0]][0] == study
    ]


def first_counts(study):
    return {
        cell.split("/", 2)[2]: seeds[0]
        for cell, (name, seeds) in ADAPTIVE_CELLS.items()
        if name == study
    }


def round_record(study, k):
    """Round k's record (a checkpoint: Snakemake plans the round first when it is not done)."""
    with open(checkpoints.adaptive_round.get(study=study, round=k).output[0]) as handle:
        return json.load(handle)


def adaptive_round_inputs(wildcards):
    k = int(wildcards.round)
    if k == 1:
        return {"markers": round_markers(wildcards.study, first_counts(wildcards.study))}
    previous = round_record(wildcards.study, k - 1)
    if previous["done"]:
        raise WorkflowError(f"{ROUND.format(**wildcards)}: round {k - 1} decided everything")
    return {
        "markers": round_markers(wildcards.study, previous["next"]),
        "previous": ROUND.format(study=wildcards.study, round=k - 1),
    }


def last_round(study):
    """(path, record) of the study's last round: the first one that decided everything."""
    k = 1
    while not (record := round_record(study, k))["done"]:
        k += 1
    return ROUND.format(study=study, round=k), record


def adaptive_rounds(wildcards):
    return [last_round(study)[0] for study in ADAPTIVE_STUDIES]


def adaptive_markers(wildcards):
    return [m for s in ADAPTIVE_STUDIES for m in round_markers(s, last_round(s)[1]["seeds"])]


def _round_job(wildcards):
    job = job_of(wildcards)
    seeds = ADAPTIVE_CELLS.get(job.path.rsplit("/", 1)[0], (None, ()))[1]
    if int(wildcards.n) not in seeds:
        raise WorkflowError(f"{job.path}: no round has {wildcards.n} seeds (rounds: {seeds})")
    return job, seeds


@job_function
def round_inputs(wildcards):
    _, seeds = _round_job(wildcards)
    inputs = finetune_inputs(wildcards)  # with the job's rerun stamp (common.smk `recheck`)
    n = int(wildcards.n)
    if n != seeds[0]:  # one writer per folder: the round before has finished
        inputs["previous"] = MARKER.format(**{**wildcards, "n": seeds[seeds.index(n) - 1]})
    return inputs


@job_function
def round_params(wildcards):
    job, _ = _round_job(wildcards)
    seeds = list(range(1, int(wildcards.n) + 1))
    return {**finetune_params(wildcards), "seeds": seeds, "manifest": f"{job.path}/seeds.json"}
