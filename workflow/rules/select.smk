# A recipe with `hparams_from` (e.g. the BIOSSES final model on train+dev) trains with the
# setting its search selected on dev: one selection file per (model, task, recipe), written from
# the search's finished cells and an input of the final job, so a changed search re-runs the
# final model (blurbflow.results.handover; docs/fidelity.md). A study's `cross_validation` uses
# it too: the evaluation folds take the tune fold's choice (job option `hparams_task`).
from blurbflow.config.grid import reference_selects, search_jobs

SEARCHES = search_jobs(JOBS)  # selection file -> the search's jobs
FINALS = {j.options.selection_file: j for j in JOBS.values() if j.options.selection_file}
SELECTION = paths.SELECTION  # blurbflow.config.grid.selection_file


rule select_hparams:
    input:
        lambda w: [f"{job.path}/seeds.json" for job in SEARCHES[SELECTION.format(**w)]],
    output:
        SELECTION,
    params:
        # the search as configured: a changed grid or seed list selects again
        sources=lambda w: [
            {"job": job.path, "options": dict(sorted(job.options.to_dict().items())), "seeds": list(job.seeds)}
            for job in SEARCHES[SELECTION.format(**w)]
        ],
        # a list, as recorded since the first run (a tuple's repr would re-run every selection)
        recipes=lambda w: list(FINALS[SELECTION.format(**w)].options.hparams_from),
    priority: BEFORE_FINETUNE
    log:
        "results/logs/selection/{model}/{task}/{recipe}.log",
    localrule: True
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/select_hparams.py"


# A study's `reference_models` (Gu et al.): its other models train only the grid point those
# models chose on dev, one job per (model, task, recipe) that waits on this file.
REFERENCE = paths.REFERENCE  # blurbflow.config.grid.reference_file
# how each reference choice picks the epoch: a study's `select: common_epoch` chooses the grid
# point at one epoch for every seed (blurbflow.results.common_epoch); studies sharing a file agree
EPOCH_SELECTS = reference_selects(config.get("studies", {}))


rule select_reference:
    input:
        lambda w: [f"{job.path}/seeds.json" for job in SEARCHES[REFERENCE.format(**w)]],
    output:
        REFERENCE,
    params:
        # the reference models' grid as configured: a changed grid or seed list chooses again
        sources=lambda w: [
            {"job": job.path, "options": dict(sorted(job.options.to_dict().items())), "seeds": list(job.seeds)}
            for job in SEARCHES[REFERENCE.format(**w)]
        ],
        models=lambda w: list(FINALS[REFERENCE.format(**w)].options.hparams_models),
        select=lambda w: EPOCH_SELECTS.get(REFERENCE.format(**w), "per_seed"),
    wildcard_constraints:
        models=r"[A-Za-z0-9][A-Za-z0-9._-]*(\+[A-Za-z0-9][A-Za-z0-9._-]*)*",
    priority: BEFORE_FINETUNE
    log:
        "results/logs/selection/reference/{models}/{task}/{recipe}.log",
    localrule: True
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/select_reference.py"
