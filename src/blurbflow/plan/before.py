"""What the size table (blurbflow.cluster) predicts a whole study costs before anything has run:
the figure `snakemake plan` starts from, which the report sets beside what the study took."""

from __future__ import annotations

from blurbflow.cluster import estimated_minutes
from blurbflow.config import cell_jobs, expand_cells


def study_jobs(config: dict) -> dict[str, dict]:
    """study → its fine-tuning jobs (folder → blurbflow.config.CellJob); studies share jobs."""
    return {name: cell_jobs(expand_cells(config, [name])) for name in config.get("studies", {})}


def table_hours(config: dict) -> dict[str, float]:
    """study → device-hours of all its fine-tuning jobs by the size table (a job shared with
    another study counts in both, as the report's compute figures do)."""
    models, overrides = config.get("models", {}), config.get("resources")
    return {
        name: sum(
            estimated_minutes(
                job.options, models[job.model].get("size", "base"), overrides, len(job.seeds)
            )
            for job in jobs.values()
        )
        / 60
        for name, jobs in study_jobs(config).items()
    }
