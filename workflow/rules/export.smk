# Exported and published models (docs/models.md). A study with `export_models` gets
# results/models/{study}/: per table entry the seed best on dev (or every seed) of cells whose
# recipe keeps its model, verified, with the entry's model card; `all` asks for it. With a
# `publish` section, rule publish_study uploads those folders to the Hugging Face Hub where
# snakemake runs (a local rule: it needs the internet and the user's token) and records the
# uploads in results/published/{study}.json; `publish_models` (Snakefile) is the target, `all` includes
# it only when `publish` is configured.
from blurbflow.export.check import check_export, exporting_studies, publish_settings

try:
    check_export(config)
except ConfigError as err:
    raise WorkflowError(f"Invalid configuration: {err}") from None

EXPORT_STUDIES = exporting_studies(config)
PUBLISH = publish_settings(config)
EXPORTED_MODELS = expand(paths.EXPORTED, study=EXPORT_STUDIES)
PUBLISHED_MODELS = expand(paths.PUBLISHED, study=PUBLISH["studies"] if PUBLISH else [])


localrules:
    publish_study,
    publish_models,
    export_models,


rule export_study:
    input:
        cells=paths.CELLS_TABLE,
        results=paths.STUDY_RESULTS,  # the study aggregated, verified and tabled
    output:
        directory(paths.EXPORTED),
    params:
        config_hash=CONFIG_HASH,
    log:
        "results/logs/export/{study}.log",
    resources:
        **SLURM_CPU,
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/export_models.py"


rule publish_study:
    input:
        models=paths.EXPORTED,
    output:
        paths.PUBLISHED,
    params:
        dry_run=lambda wildcards: bool(PUBLISH and PUBLISH["dry_run"]),
        settings=lambda wildcards: {k: v for k, v in (PUBLISH or {}).items() if k != "dry_run"},
    log:
        "results/logs/publish/{study}.log",
    conda:
        BLURBFLOW_ENV
    script:
        "../scripts/publish_models.py"
