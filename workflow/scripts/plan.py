# Rule plan (workflow/rules/plan.smk): what is still to run and its cost, printed to the terminal
# and to the rule's log.
import contextlib
import os
import sys

from blurbflow.steps import call, plan
from blurbflow.tasks import register_tasks


class Both:
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for stream in self.streams:
            stream.write(text)

    def flush(self):
        for stream in self.streams:
            stream.flush()


register_tasks(snakemake.config)  # the config's own tasks (`tasks:`), for this job
os.makedirs(os.path.dirname(snakemake.log[0]), exist_ok=True)
with open(snakemake.log[0], "w") as log, contextlib.redirect_stdout(Both(sys.stdout, log)):
    status = call("plan", plan, config=snakemake.config, profile=snakemake.params.profile)
sys.exit(status)
