# Rule plan (workflow/rules/plan.smk): what is still to run and its cost, printed.
import sys

from blurbflow.steps import call, plan
from blurbflow.tasks import register_tasks

register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
sys.exit(call("plan", plan, config=snakemake.config, profile=snakemake.params.profile))
