"""The workflow's steps as functions of Python values: the rules' entry points
(workflow/scripts/*.py) and the `blurbflow` command line both call these. Each step imports its
library modules inside: a fetch or prepare job never pays for torch and transformers (~3 s)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from pathlib import Path

from blurbflow.options import CellOptions
from blurbflow.train import CellsFailed, JobLocked, Preempted

# A day after the epoch: Snakemake reads an mtime of 0 as "no time" and would skip the check.
STALE_MTIME = 86400


def generate(source: str, out: str, seed: int = 0) -> None:
    from blurbflow.data.generate import generate_source

    generate_source(source, Path(out), seed=int(seed))


def fetch(source: str, out: str, mirror: str | None = None, manual_dir: str | None = None) -> None:
    from blurbflow.data.fetch import fetch_source

    manual = Path(manual_dir) if manual_dir else None
    summary = fetch_source(source, Path(out), mirror=mirror or None, manual_dir=manual)
    print(json.dumps(summary, indent=2))


def prepare(task: str, raw_root: str, out: str) -> None:
    from blurbflow.data.prepare import prepare_task

    print(json.dumps(prepare_task(task, Path(raw_root), Path(out)), indent=2))


def build_model(spec: dict, corpus: list[str], out: str) -> None:
    from blurbflow.models.build import build_demo_model
    from blurbflow.stage_versions import build_versions
    from blurbflow.util.artefacts import verify

    for path in corpus:  # a damaged corpus file: rebuilt first, never pre-trained on
        verify(Path(path).parent, "the pre-training corpus")
    summary = build_demo_model(
        [Path(p) for p in corpus],
        Path(out),
        hidden_size=spec.get("hidden_size", 64),
        num_layers=spec.get("num_layers", 2),
        pretrain_epochs=spec.get("pretrain_epochs", 1),
    )
    print(json.dumps({**summary, "versions": build_versions()}))  # blurbflow.stage_versions


def stage_bytes(folders: dict, readers: dict, inputs: dict, dates: dict, out: str) -> None:
    """After the stages re-made for a version bump: put back the dates of the folders whose
    content is what their jobs computed from (blurbflow.stage_bytes)."""
    from blurbflow.stage_bytes import check
    from blurbflow.util.io import write_json_atomic

    write_json_atomic(out, check(folders, readers, inputs, dates))


def prefetch(hub_id: str, cache_dir: str, out: str, revision: str | None = None) -> None:
    # The one step that goes online: jobs inherit HF_HUB_OFFLINE=1 (blurbflow.models.prefetch),
    # and huggingface_hub reads it when first imported, i.e. below.
    os.environ["HF_HUB_OFFLINE"] = "0"
    from blurbflow.models.download import prefetch_model, write_marker

    summary = prefetch_model(hub_id, Path(cache_dir), revision=revision)
    print(json.dumps(write_marker(summary, Path(out)), indent=2))


def tokenize(
    task: str,
    data: str,
    tokenizer: str,
    out: str,
    input_key: str | None = None,
    max_length: int | None = None,
    model_name: str | None = None,
    settings: dict | None = None,
) -> None:
    """Encode a prepared task for one tokenizer; `input_key` (e.g. L256-markers) names the input
    options, or `max_length` alone with the task's default inputs."""
    from blurbflow.config import input_key as key_of
    from blurbflow.models.limits import check_input_length
    from blurbflow.models.load import load_tokenizer, tokenizer_settings
    from blurbflow.models.prefetch import model_folder
    from blurbflow.options import InputOptions, ModelOptions
    from blurbflow.tasks import get_task
    from blurbflow.train.encode import encode_task
    from blurbflow.util.artefacts import verify

    spec = get_task(task)
    inputs = InputOptions.from_key(input_key) if input_key else InputOptions(max_length=max_length)
    if input_key and key_of(spec.name, inputs) != input_key:
        raise ValueError(
            f"input key {input_key!r} is not the key of task {spec.name}'s inputs; expected "
            f"{key_of(spec.name, inputs)!r}"
        )
    model = ModelOptions(model=model_name or tokenizer, model_source=tokenizer, **(settings or {}))
    check_input_length(model, inputs.max_length)  # before tokenizing, not at the first step
    verify(data, "prepared data")  # damaged inputs: rebuilt first (blurbflow.util.artefacts)
    verify(model_folder(model), f"model {model.model}")
    tokenizer_ = load_tokenizer(model_folder(model), **tokenizer_settings(model))
    meta = encode_task(spec, Path(data), tokenizer_, inputs, Path(out), settings)
    print(json.dumps(meta, indent=2))


def finetune(
    options: CellOptions,
    seeds: list[int],
    encoded: str,
    data: str,
    out: str,
    threads: int = 1,
    marker: str | None = None,
    config: dict | None = None,
) -> None:
    """The seeds of one job; `options`: `CellOptions.from_dict` of the rule's params. `marker`:
    a copy of the manifest `out` once written (a round of adaptive seeds, adaptive.smk).
    `config`: the workflow's; its `tracking` (docs/tracking.md), `engine` (blurbflow.train.engine)
    and the model entry's `attn_implementation` (blurbflow.models.attention) are no params: they
    re-run nothing."""
    from blurbflow.models import attention
    from blurbflow.train import engine
    from blurbflow.train.job import run_cell_job
    from blurbflow.train.tracking import job_tracking
    from blurbflow.util.io import write_text_atomic

    entry = ((config or {}).get("models") or {}).get(options.model) or {}
    attention.use(entry.get("attn_implementation"))  # no param: it re-runs nothing
    engine.use((config or {}).get("engine"))
    statuses = run_cell_job(
        options,
        [int(s) for s in seeds],
        Path(encoded),
        Path(data),
        Path(out),
        threads=int(threads),
        tracked=job_tracking(config, options),
    )
    print(json.dumps(statuses))
    if marker:
        write_text_atomic(marker, Path(out).read_text())


def aggregate(
    config: dict, out: str, rescore: bool | None = None, rounds: list[str] | None = None
) -> None:
    """`rounds`: each adaptive study's last round file: the seeds its cells have (the rule
    gives them; without, as from the CLI, what the latest rounds on disk ask for)."""
    from blurbflow.results.aggregate import aggregate as aggregate_cells
    from blurbflow.results.aggregate import write_cells
    from blurbflow.results.rounds import final_seeds, planned_seeds

    adaptive = planned_seeds(config) if rounds is None else final_seeds(rounds)
    # rejected cells' jobs lose their manifest
    frame = aggregate_cells(config, rescore=rescore, adaptive=adaptive)
    write_cells(frame, Path(out))
    print(frame["status"].value_counts().to_string())


def adaptive_round(config: dict, study: str, round_: int, previous: str | None, out: str) -> None:
    """Round `round_` of an adaptive study: its decisions and each cell's seeds next."""
    from blurbflow.results.rounds import decide_round, read_round, write_round

    record = decide_round(config, study, round_, read_round(previous) if previous else None)
    write_round(record, out)
    print(json.dumps({k: record[k] for k in ("seeds", "next", "done")}, indent=1))


def _write_tables(config: dict, cells, out_dir: Path, results_dir: Path | None = None) -> None:
    """Per study its table (CSV, Markdown, LaTeX), its numbers beside the paper's
    (`{study}.reproduction.csv`; empty published columns when there are none), its
    comparisons with their power (`{study}.comparisons.csv`) and its study-level
    `{results_dir}/{study}.json` (default: the folder above `out_dir`)."""
    from blurbflow.results.comparisons import study_comparisons, write_comparisons
    from blurbflow.results.formats import write_table
    from blurbflow.results.layout import shown_study
    from blurbflow.results.reproduction import reproduction_rows, write_reproduction
    from blurbflow.results.study_cells import study_cells
    from blurbflow.results.study_json import study_results, write_study_results
    from blurbflow.results.tables import study_table

    results_dir = out_dir.parent if results_dir is None else results_dir
    for name, study in config["studies"].items():
        selected = study_cells(cells, shown_study(study))
        table = study_table(cells, name, study, selected)
        write_table(table, out_dir / name)
        rows = reproduction_rows(cells, name, study, selected, table)
        write_reproduction(rows, out_dir / name)
        write_comparisons(study_comparisons(cells, study, selected), out_dir / name)
        results = study_results(cells, config, name, selected, reproduction=rows)
        write_study_results(results, results_dir / f"{name}.json")


def _write_report(config: dict, config_hash: str, cells, out: Path) -> None:
    from blurbflow.plan.before import table_hours
    from blurbflow.report.render import render_report
    from blurbflow.util.provenance import collect_provenance

    provenance = collect_provenance(config, config_hash, cells)
    render_report(cells, config["studies"], out, provenance, table_hours(config))
    print(f"wrote {out}")


def tables(config: dict, cells: str, out_dir: str, results_dir: str | None = None) -> None:
    import pandas as pd

    results = None if results_dir is None else Path(results_dir)
    _write_tables(config, pd.read_parquet(cells), Path(out_dir), results)


def report(config: dict, config_hash: str, cells: str, out: str) -> None:
    import pandas as pd

    _write_report(config, config_hash, pd.read_parquet(cells), Path(out))


def report_after_failure(
    config: dict, config_hash: str, cells: str, partial: str, out_dir: str, out: str
) -> None:
    """Tables and report of what a failed run finished (the workflow's `onerror`), leaving the
    aggregation stale so the next run re-runs the failed jobs and everything after them:
    the complete table (`cells`) is removed, the partial one goes to `partial`, and the report
    is dated older than the tables it reads (else Snakemake would find nothing to do)."""
    from blurbflow.results.aggregate import aggregate as aggregate_cells
    from blurbflow.results.aggregate import write_cells
    from blurbflow.results.rounds import planned_seeds

    Path(cells).unlink(missing_ok=True)
    frame = aggregate_cells(config, adaptive=planned_seeds(config))  # adaptive: latest round
    write_cells(frame, Path(partial))
    _write_tables(config, frame, Path(out_dir))
    _write_report(config, config_hash, frame, Path(out))
    os.utime(out, (STALE_MTIME, STALE_MTIME))
    print(frame["status"].value_counts().to_string())


def plan(config: dict, root: str = ".", profile: str | None = None) -> dict:
    """What is still to run under `root` and what it costs: cells, jobs, GPU-hours and SLURM
    queue entries per study, per model and in total (blurbflow.plan), printed; changes
    nothing. `profile`: the SLURM profile whose `group-components` packs short jobs
    (default: {root}/slurm/profile.yaml)."""
    from blurbflow.plan.estimate import plan_config
    from blurbflow.plan.text import format_plan
    from blurbflow.tasks import register_tasks

    register_tasks(config)  # the config's own tasks (their `size` counts)
    found = plan_config(config, root, profile)
    print(format_plan(found))
    return found


def call(name: str, step, **kwargs) -> int:
    """Run a step; its exit status as the scheduler should see it, errors on stderr."""
    try:
        step(**kwargs)
    except CellsFailed as exc:
        print(f"blurbflow {name}: {exc} (see their result.json)", file=sys.stderr)
        return 1
    except Preempted as exc:
        print(f"blurbflow {name}: {exc}", file=sys.stderr)
        return 143  # as a process killed by SIGTERM: the scheduler retries, the retry resumes
    except (ValueError, KeyError, FileNotFoundError, JobLocked) as exc:
        print(f"blurbflow {name}: error: {exc}", file=sys.stderr)
        return 1
    return 0


def run_rule(log: str, step, **kwargs) -> None:
    """A rule's script: stdout and stderr go to the rule's log (file descriptors: what torch or
    a subprocess writes lands there too); the process exits with the step's status."""
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as handle:
        os.dup2(handle.fileno(), 1)
        os.dup2(handle.fileno(), 2)
    for stream in (sys.stdout, sys.stderr):  # progress lines reach the log as they come
        stream.reconfigure(line_buffering=True)
    sys.stdout.flush()
    sys.exit(call(step.__name__.replace("_", "-"), step, **kwargs))


def run_in_process(log: str, step, **kwargs) -> int:
    """A step inside the snakemake process itself (the `onerror` handler): its output goes to
    `log` (Python-level, so Snakemake's own output is left alone); returns its exit status."""
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as handle:
        with contextlib.redirect_stdout(handle), contextlib.redirect_stderr(handle):
            try:
                return call(step.__name__.replace("_", "-"), step, **kwargs)
            except Exception:  # never take the snakemake process down with it: log and go on
                traceback.print_exc()
                return 1
