# What this run was launched with: its config files and `--config` overrides
# (blurbflow.util.provenance). Every cell's result.json records them through the environment its
# jobs inherit (no param: recording them re-runs nothing; a SLURM job's snakemake re-reads the
# same files and `--config`), results/logs/launches.jsonl keeps one line per run that starts
# jobs, and a run of the paper config (no --configfile) says what it is about to train before
# its first job (blurbflow.plan: `snakemake plan`'s total, in about a second at paper scale).
import json

from blurbflow.util.provenance import LAUNCH_ENV, LAUNCHES, append_launch, launch_record

LAUNCH = launch_record(workflow.configfiles, workflow.config_settings.config)
os.environ[LAUNCH_ENV] = json.dumps(LAUNCH)
# targets whose DAG holds the fine-tuning jobs (none: the default target, `all`)
TRAINING_TARGETS = {"all", "cells", "aggregate", "tables", "report", "export_models", "publish_models"}


def record_launch():
    """Called by `onstart` (common.smk), so never in a dry run: the launch line, the record."""
    if not workflow.is_main_process:
        return
    targets = list(workflow.dag_settings.targets or ())
    if not workflow.overwrite_configfiles and (not targets or TRAINING_TARGETS & set(targets)):
        from blurbflow.plan.estimate import launch_summary
        from blurbflow.plan.text import launch_line

        try:
            summary = launch_summary(config, JOBS)
        except Exception as err:  # a line to inform: a file it reads (being rebuilt) stops nothing
            summary = f"{type(err).__name__}: {err}"
        print(launch_line(summary, ", ".join(LAUNCH["configfiles"])), file=sys.stderr)
    if set(targets) != {"plan"}:  # `snakemake plan` changes nothing (plan.smk)
        append_launch(LAUNCHES, LAUNCH, targets)
