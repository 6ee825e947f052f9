# blurbflow: BLURB benchmarking as one DAG. Rules run thin scripts (workflow/scripts/);
# all logic lives in the package (src/blurbflow). See README.md and docs/.
import gc

from snakemake.utils import min_version, validate

min_version("9.19")  # a profile folder holding only profile.yaml (profiles/default) needs 9.19

# Planning a paper-scale DAG keeps millions of objects (jobs, their files); at Python's default
# thresholds (a collection every 700 allocations) the cyclic garbage collector took a fifth of
# a dry run of config.yaml. Every 50,000: the same memory, 1.4 s less (docs/slurm.md). While the
# DAG is built only the young objects are collected, not the aging ones again and again (the
# same memory, 6 % less of the dry run, 7 % at 4x its jobs); `onstart` (never in a dry run)
# collects every generation again for the run's long life (common.smk).
PLANNING_GC, RUN_GC = (50_000, 10**9, 10**9), (50_000, 20, 100)
gc.set_threshold(*PLANNING_GC)


# `--configfile X` replaces the default rather than merging into it (`--config k=v` still merges).
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


# `snakemake --report report.zip` after a run: the tables and the HTML report (report() outputs)
report: "workflow/report/workflow.rst"


include: "workflow/rules/validate.smk"

include: "workflow/rules/common.smk"
include: "workflow/rules/launch.smk"  # the config files and --config it ran with
include: "workflow/rules/data.smk"
include: "workflow/rules/model.smk"
include: "workflow/rules/prefetch.smk"
include: "workflow/rules/tokenize.smk"
include: "workflow/rules/finetune.smk"
include: "workflow/rules/stage_bytes.smk"  # a stage re-made with the same content: no job
include: "workflow/rules/adaptive.smk"  # rounds of adaptive seeds; fixed-seed JOB_MANIFESTS
include: "workflow/rules/select.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/export.smk"  # export_models / publish_models (docs/models.md)
include: "workflow/rules/plan.smk"  # `snakemake plan`: what is left to run, in GPU-hours


rule all:
    input:
        paths.REPORT,
        TABLE_FILES,
        STUDY_RESULTS,
        EXPORTED_MODELS,  # studies with `export_models` (export.smk)
        PUBLISHED_MODELS,  # only with a `publish` section
    default_target: True


rule export_models:  # studies' best seeds as model folders (export.smk, docs/models.md)
    input:
        EXPORTED_MODELS,


rule publish_models:  # those folders uploaded to the Hub (only with a `publish` section)
    input:
        PUBLISHED_MODELS,


rule data:
    input:
        [f"{paths.data(task)}/stats.json" for task in STUDY_TASKS],


rule cells:
    input:
        job_manifests,  # aggregate.smk
        adaptive_markers,  # adaptive studies' jobs at their last round (adaptive.smk)
