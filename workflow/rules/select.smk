# A recipe with `hparams_from` (e.g. the BIOSSES final model on train+dev) trains with the
# setting its search selected on dev: one selection file per (model, task, recipe), written from
# the search's finished cells and an input of the final job, so a changed search re-runs the
# final model (blurbflow.results.selected; docs/fidelity.md).
from blurbflow.grid import SELECTED, search_jobs

SEARCHES = search_jobs(JOBS)  # selection file -> the search's jobs


def selection_job(wildcards):
    """(the final job, the search's jobs) of a selection file."""
    w = wildcards
    final = JOBS.get(f"results/cells/{w.model}/{w.task}/{w.recipe}/{SELECTED}")
    if final is None or not final.options.get("hparams_from"):
        raise WorkflowError(f"{w.model}/{w.task}: recipe {w.recipe!r} has no `hparams_from`")
    return final, SEARCHES[final.options["selection"]]


rule select_hparams:
    input:
        lambda wildcards: [f"{job.path}/seeds.json" for job in selection_job(wildcards)[1]],
    output:
        "results/selection/{model}/{task}/{recipe}.json",
    params:
        # the search as configured: a changed grid or seed list selects again
        sources=lambda wildcards: [
            {"job": job.path, "options": dict(sorted(job.options.items())), "seeds": list(job.seeds)}
            for job in selection_job(wildcards)[1]
        ],
        recipes=lambda wildcards: selection_job(wildcards)[0].options["hparams_from"],
    log:
        "results/logs/selection/{model}/{task}/{recipe}.log",
    localrule: True
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/select_hparams.py"
