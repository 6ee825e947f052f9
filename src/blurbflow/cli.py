"""`blurbflow` command line, for people: one subcommand per workflow step (blurbflow.steps,
which the rules' scripts in workflow/scripts/ call with Python values)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from blurbflow import model_urls, steps
from blurbflow.options import CellOptions
from blurbflow.steps import STALE_MTIME  # noqa: F401  (tests read it here)


def _config(text: str) -> dict:
    """The workflow's config: JSON text, or the path of a YAML/JSON file holding it."""
    if text.lstrip().startswith("{"):
        return json.loads(text)
    return yaml.safe_load(Path(text).read_text())


# argparse namespace -> the step's keyword arguments, for the subcommands whose flags differ.
ARGS = {
    "build-model": lambda a: {"spec": json.loads(a.spec), "corpus": a.corpus, "out": a.out},
    "tokenize": lambda a: {
        "task": a.task,
        "data": a.data,
        "tokenizer": a.tokenizer,
        "out": a.out,
        "input_key": a.input_key,
        "max_length": a.max_length,
        "model_name": a.model_name,
        "settings": {
            **(json.loads(a.settings) if a.settings else {}),
            **({"trust_remote_code": True} if a.trust_remote_code else {}),
        },
    },
    "finetune": lambda a: {
        "options": CellOptions.from_dict(json.loads(a.options), where="--options"),
        "seeds": [int(s) for s in a.seeds.split(",")],
        "encoded": a.encoded,
        "data": a.data,
        "out": a.out,
        "threads": a.threads,
    },
    "aggregate": lambda a: {
        "config": _config(a.config_json),
        "out": a.out,
        "rescore": True if a.rescore else None,
    },
}


def _kwargs(args) -> dict:
    """The parsed flags as the step's keyword arguments (config JSON parsed)."""
    if args.command in ARGS:
        return ARGS[args.command](args)
    kwargs = {k: v for k, v in vars(args).items() if k not in ("command", "func")}
    if "config_json" in kwargs:
        kwargs["config"] = _config(kwargs.pop("config_json"))
    return kwargs


CONFIG_HELP = "the validated config: a YAML/JSON file, or JSON text"


def export_models(config: dict, study: str, cells: str, out: str | None) -> None:
    """A study's chosen seeds' kept models with their cards (blurbflow.export.folder)."""
    from blurbflow.export.folder import export_study
    from blurbflow.tasks import register_tasks

    register_tasks(config)
    export_study(config, study, cells, out or f"results/models/{study}")


def publish_models(
    config: dict, study: str, models: str | None, out: str | None, dry_run: bool
) -> None:
    """Upload a study's exported models (blurbflow.export.publish); `--dry-run` lists them."""
    from blurbflow.export.publish import publish_study

    models, out = models or f"results/models/{study}", out or f"results/published/{study}.json"
    publish_study(config, study, models, out, dry_run=True if dry_run else None)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="blurbflow", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("generate", help="write a synthetic raw source in its real format")
    p.add_argument("--source", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.set_defaults(func=steps.generate)

    p = sub.add_parser("fetch", help="download, extract and verify a raw source")
    p.add_argument("--source", required=True)
    p.add_argument("--mirror", help="base URL or folder laid out {host}/{path}")
    p.add_argument("--manual-dir", help="folder holding manual downloads (BioASQ)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=steps.fetch)

    p = sub.add_parser("prepare", help="raw source files -> resources/data/{task}/*.parquet")
    p.add_argument("--task", required=True)
    p.add_argument("--raw-root", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(func=steps.prepare)

    p = sub.add_parser("build-model", help="build the demo's tokenizer and tiny BERT")
    p.add_argument("--spec", required=True, help="the model's config entry as JSON")
    p.add_argument("--out", required=True)
    p.add_argument("corpus", nargs="+", help="prepared train.parquet files")
    p.set_defaults(func=steps.build_model)

    p = sub.add_parser("prefetch", help="download a hub model's config, tokenizer and weights")
    p.add_argument("--hub-id", required=True)
    p.add_argument("--revision", help="branch, tag or commit (default: main)")
    p.add_argument("--cache-dir", required=True, help="the config's hf_cache")
    p.add_argument("--out", required=True, help="marker JSON, written once the snapshot is whole")
    p.set_defaults(func=steps.prefetch)

    p = sub.add_parser("prefetch-url", help="download, verify and unpack a model given by URL")
    p.add_argument("--model", required=True, help="the model's name in the config (for messages)")
    p.add_argument("--url", required=True, help="a tar(.gz) or zip of a save_pretrained folder")
    p.add_argument("--sha256", help="the pin; without it the digest is printed, nothing unpacked")
    p.add_argument("--subfolder", help="the model folder inside the archive")
    p.add_argument("--cache-dir", required=True, help="the config's hf_cache")
    p.add_argument("--out", help="the marker expected (checked; the marker is written anyway)")
    p.set_defaults(func=model_urls.prefetch_url)

    p = sub.add_parser("prefetch-check", help="re-download what prefetched models lost")
    p.add_argument("markers", nargs="*", help="prefetch markers ({hf_cache}/.prefetched/*.json)")
    p.set_defaults(func=model_urls.check_markers)

    p = sub.add_parser("tokenize", help="encode a prepared task for one tokenizer and inputs")
    p.add_argument("--model-name", help="the model's name in the config (for messages)")
    p.add_argument("--trust-remote-code", action="store_true", help="only if the config says so")
    p.add_argument(
        "--settings", help="the model's settings as JSON: revision, cased, add_prefix_space, …"
    )
    p.add_argument("--task", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--tokenizer", required=True)
    key = p.add_mutually_exclusive_group(required=True)
    key.add_argument(
        "--input-key", help="the input options as blurbflow.config.input_key writes them"
    )
    key.add_argument("--max-length", type=int, help="that length with default input options")
    p.add_argument("--out", required=True)
    p.set_defaults(func=steps.tokenize)

    p = sub.add_parser("finetune", help="run the seeds of one (model, task, recipe, hparams)")
    p.add_argument("--options", required=True, help="the cells' options (but the seed) as JSON")
    p.add_argument("--seeds", required=True, help="comma-separated seeds, e.g. 1,2,3")
    p.add_argument("--threads", type=int, default=1, help="CPU threads for torch")
    p.add_argument("--encoded", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True, help="the job's manifest, {job folder}/seeds.json")
    p.set_defaults(func=steps.finetune)

    for name, func, helptext in (
        ("aggregate", steps.aggregate, "every cell's result.json -> cells.parquet"),
        ("tables", steps.tables, "cells.parquet -> per study its tables and {study}.json"),
        ("report", steps.report, "cells.parquet -> report.html"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument(
            "--config", "--config-json", dest="config_json", required=True, help=CONFIG_HELP
        )
        p.set_defaults(func=func)
        if name == "aggregate":
            p.add_argument("--out", required=True)
            p.add_argument(
                "--rescore", action="store_true", help="re-score every cell's predictions"
            )
        else:
            p.add_argument("--cells", required=True)
        if name == "tables":
            p.add_argument("--out-dir", required=True)
        if name == "report":
            p.add_argument("--config-hash", required=True)
            p.add_argument("--out", required=True)

    p = sub.add_parser("export-models", help="a study's best seeds' models -> results/models/")
    p.add_argument("--config", "--config-json", dest="config_json", required=True, help=CONFIG_HELP)
    p.add_argument("--study", required=True)
    p.add_argument("--cells", default="results/cells.parquet")
    p.add_argument("--out", help="default: results/models/{study}")
    p.set_defaults(func=export_models)

    p = sub.add_parser("publish-models", help="upload a study's exported models to the hub")
    p.add_argument("--config", "--config-json", dest="config_json", required=True, help=CONFIG_HELP)
    p.add_argument("--study", required=True)
    p.add_argument("--models", help="the export (default: results/models/{study})")
    p.add_argument("--out", help="the record (default: results/published/{study}.json)")
    p.add_argument("--dry-run", action="store_true", help="list the uploads, upload nothing")
    p.set_defaults(func=publish_models)

    p = sub.add_parser("plan", help="cells, jobs, GPU-hours and queue entries still to run")
    p.add_argument(
        "--configfile",
        "--config",
        dest="config_json",
        default="config.yaml",
        help=CONFIG_HELP + " (default: config.yaml)",
    )
    p.add_argument("--root", default=".", help="the workflow folder whose results/ are read")
    p.add_argument("--profile", help="SLURM profile (default: {root}/slurm/profile.yaml)")
    p.set_defaults(func=steps.plan)

    p = sub.add_parser("cell", help="re-run one cell here to debug it (docs/troubleshooting.md)")
    p.add_argument("folder", help="results/cells/<model>/<task>/<recipe>/<hparams>[/seed<N>]")
    p.add_argument(
        "--configfile",
        "--configfiles",
        nargs="+",
        action="extend",
        metavar="FILE",
        help="the config files, merged in order, as snakemake takes them (default: those the"
        " cell ran with, recorded in its result.json; else config.yaml)",
    )
    p.add_argument(
        "--config",
        nargs="+",
        action="extend",
        metavar="KEY=VALUE",
        help="overrides, as snakemake's --config (without --configfile: over the recorded ones)",
    )
    p.add_argument("--max-steps", type=int, help="stop after this many optimizer steps")
    p.add_argument("--pdb", action="store_true", help="stop in the debugger where it raised")
    p.add_argument("--threads", type=int, default=1, help="CPU threads for torch")

    p = sub.add_parser("report-after-failure", help="tables and report of a failed run")
    p.add_argument("--config", "--config-json", dest="config_json", required=True, help=CONFIG_HELP)
    p.add_argument("--config-hash", required=True)
    p.add_argument("--cells", required=True, help="the complete table, removed (stale)")
    p.add_argument("--partial", required=True, help="where the partial table goes")
    p.add_argument("--out-dir", required=True, help="tables folder")
    p.add_argument("--out", required=True, help="report.html")
    p.set_defaults(func=steps.report_after_failure)
    return parser


def cell(args) -> int:
    """`blurbflow cell`: not through steps.call, which would catch the error being debugged."""
    from blurbflow.train.debug_cell import CellNotRunnable, debug_cell

    try:
        return debug_cell(
            args.folder, args.configfile, args.config, args.max_steps, args.pdb, args.threads
        )
    except CellNotRunnable as exc:
        print(f"blurbflow cell: {exc}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "cell":
        return cell(args)
    return steps.call(args.command, args.func, **_kwargs(args))


if __name__ == "__main__":
    sys.exit(main())
