"""What the size table (blurbflow.cluster) predicts a whole study costs before anything has run:
the figure `snakemake plan` starts from, which the report sets beside what the study took."""

from __future__ import annotations

from blurbflow.cluster import estimated_minutes
from blurbflow.config import cell_jobs, expand_cells


def table_hours(config: dict) -> dict[str, float]:
    """study → device-hours of all its fine-tuning jobs by the size table (a job shared with
    another study counts in both, as the report's compute figures do)."""
    models, overrides = config.get("models", {}), config.get("resources")
    hours = {}
    for name in config.get("studies", {}):
        jobs = cell_jobs(expand_cells(config, [name])).values()
        minutes = sum(
            estimated_minutes(
                job.options, models[job.model].get("size", "base"), overrides, len(job.seeds)
            )
            for job in jobs
        )
        hours[name] = minutes / 60
    return hours
