"""`blurbflow` command line: one subcommand per workflow step. Snakemake rules call these;
each imports only what it needs so that light steps start fast."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from blurbflow.train import CellsFailed, Preempted


def _generate(args) -> None:
    from blurbflow.data.generate import generate_source

    generate_source(args.source, Path(args.out), seed=args.seed)


def _fetch(args) -> None:
    from blurbflow.data.fetch import fetch_source

    summary = fetch_source(
        args.source,
        Path(args.out),
        mirror=args.mirror,
        manual_dir=Path(args.manual_dir) if args.manual_dir else None,
    )
    print(json.dumps(summary, indent=2))


def _prepare(args) -> None:
    from blurbflow.data.prepare import prepare_task

    stats = prepare_task(args.task, Path(args.raw_root), Path(args.out))
    print(json.dumps(stats, indent=2))


def _build_model(args) -> None:
    from blurbflow.models.build import build_demo_model

    spec = json.loads(args.spec)
    summary = build_demo_model(
        [Path(p) for p in args.corpus],
        Path(args.out),
        hidden_size=spec.get("hidden_size", 64),
        num_layers=spec.get("num_layers", 2),
        pretrain_epochs=spec.get("pretrain_epochs", 1),
    )
    print(json.dumps(summary))


def _prefetch(args) -> None:
    from blurbflow.models.download import prefetch_model, write_marker

    summary = prefetch_model(args.hub_id, Path(args.cache_dir), revision=args.revision)
    marker = write_marker(summary, Path(args.out))
    print(json.dumps(marker, indent=2))


def _prefetch_check(args) -> None:
    from blurbflow.models.download import repair_marker

    for marker in args.markers:
        print(repair_marker(Path(marker)), flush=True)


def _tokenize(args) -> None:
    from blurbflow.config import input_key, parse_input_key
    from blurbflow.models.load import load_tokenizer, tokenizer_settings
    from blurbflow.models.prefetch import model_folder
    from blurbflow.tasks import get_task
    from blurbflow.train.encode import encode_task

    spec = get_task(args.task)
    key = args.input_key or input_key(spec.name, {"max_length": args.max_length})
    inputs = parse_input_key(key)
    if input_key(spec.name, inputs) != key:
        raise ValueError(
            f"input key {key!r} is not the key of task {spec.name}'s inputs; expected "
            f"{input_key(spec.name, inputs)!r}"
        )
    model = {
        "model": args.model_name or args.tokenizer,
        "model_source": args.tokenizer,
        **(json.loads(args.settings) if args.settings else {}),
    }
    if args.trust_remote_code:
        model["trust_remote_code"] = True
    meta = encode_task(
        spec,
        Path(args.data),
        load_tokenizer(model_folder(model), **tokenizer_settings(model)),
        inputs["max_length"],
        Path(args.out),
        segment_ids=inputs["segment_ids"],
        tagging=inputs["tagging"],
        re_input=inputs["re_input"],
    )
    print(json.dumps(meta, indent=2))


def _finetune(args) -> None:
    from blurbflow.train.job import run_cell_job

    statuses = run_cell_job(
        json.loads(args.options),
        [int(seed) for seed in args.seeds.split(",")],
        Path(args.encoded),
        Path(args.data),
        Path(args.out),
        threads=args.threads,
    )
    print(json.dumps(statuses))


def _config(args) -> dict:
    """The workflow's config, passed as JSON or as `b64:` + base64 of the JSON."""
    text = args.config_json
    if text.startswith("b64:"):
        import base64

        text = base64.b64decode(text[4:]).decode()
    return json.loads(text)


def _aggregate(args) -> None:
    from blurbflow.results.aggregate import aggregate, write_cells

    # verified; rejected cells' jobs lose their manifest
    frame = aggregate(_config(args), rescore=True if args.rescore else None)
    write_cells(frame, Path(args.out))
    print(frame["status"].value_counts().to_string())


def _write_tables(config: dict, cells, out_dir: Path) -> None:
    from blurbflow.results.tables import study_table, write_table

    for name, study in config["studies"].items():
        write_table(study_table(cells, name, study), out_dir / name)


def _write_report(config: dict, config_hash: str, cells, out: Path) -> None:
    from blurbflow.report.provenance import collect_provenance
    from blurbflow.report.render import render_report

    provenance = collect_provenance(config, config_hash, cells)
    render_report(cells, config["studies"], out, provenance)
    print(f"wrote {out}")


def _tables(args) -> None:
    import pandas as pd

    _write_tables(_config(args), pd.read_parquet(args.cells), Path(args.out_dir))


def _report(args) -> None:
    import pandas as pd

    _write_report(_config(args), args.config_hash, pd.read_parquet(args.cells), Path(args.out))


# A day after the epoch: Snakemake reads an mtime of 0 as "no time" and would skip the check.
STALE_MTIME = 86400


def _report_after_failure(args) -> None:
    """Tables and report of what a failed run finished (the workflow's `onerror`), leaving the
    aggregation stale so the next run re-runs the failed jobs and everything after them:
    the complete table (--cells) is removed, the partial one goes to --partial, and the report
    is dated older than the tables it reads (else Snakemake would find nothing to do)."""
    from blurbflow.results.aggregate import aggregate, write_cells

    config = _config(args)
    Path(args.cells).unlink(missing_ok=True)
    frame = aggregate(config)
    write_cells(frame, Path(args.partial))
    _write_tables(config, frame, Path(args.out_dir))
    _write_report(config, args.config_hash, frame, Path(args.out))
    os.utime(args.out, (STALE_MTIME, STALE_MTIME))
    print(frame["status"].value_counts().to_string())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="blurbflow", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("generate", help="write a synthetic raw source in its real format")
    p.add_argument("--source", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.set_defaults(func=_generate)

    p = sub.add_parser("fetch", help="download, extract and verify a raw source")
    p.add_argument("--source", required=True)
    p.add_argument("--mirror", help="base URL or folder laid out {host}/{path}")
    p.add_argument("--manual-dir", help="folder holding manual downloads (BioASQ)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_fetch)

    p = sub.add_parser("prepare", help="raw source files -> resources/data/{task}/*.parquet")
    p.add_argument("--task", required=True)
    p.add_argument("--raw-root", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(func=_prepare)

    p = sub.add_parser("build-model", help="build the demo's tokenizer and tiny BERT")
    p.add_argument("--spec", required=True, help="the model's config entry as JSON")
    p.add_argument("--out", required=True)
    p.add_argument("corpus", nargs="+", help="prepared train.parquet files")
    p.set_defaults(func=_build_model)

    p = sub.add_parser("prefetch", help="download a hub model's config, tokenizer and weights")
    p.add_argument("--model-name", help="the model's name in the config (for messages)")
    p.add_argument("--hub-id", required=True)
    p.add_argument("--revision", help="branch, tag or commit (default: main)")
    p.add_argument("--cache-dir", required=True, help="the config's hf_cache")
    p.add_argument("--out", required=True, help="marker JSON, written once the snapshot is whole")
    p.set_defaults(func=_prefetch)

    p = sub.add_parser("prefetch-check", help="re-download what prefetched snapshots lost")
    p.add_argument("markers", nargs="*", help="prefetch markers ({hf_cache}/.prefetched/*.json)")
    p.set_defaults(func=_prefetch_check)

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
    p.set_defaults(func=_tokenize)

    p = sub.add_parser("finetune", help="run the seeds of one (model, task, recipe, hparams)")
    p.add_argument("--options", required=True, help="the cells' options (but the seed) as JSON")
    p.add_argument("--seeds", required=True, help="comma-separated seeds, e.g. 1,2,3")
    p.add_argument("--threads", type=int, default=1, help="CPU threads for torch")
    p.add_argument("--encoded", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True, help="the job's manifest, {job folder}/seeds.json")
    p.set_defaults(func=_finetune)

    for name, func, helptext in (
        ("aggregate", _aggregate, "every cell's result.json -> cells.parquet"),
        ("tables", _tables, "cells.parquet -> one table per study"),
        ("report", _report, "cells.parquet -> report.html"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--config-json", required=True)
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

    p = sub.add_parser("report-after-failure", help="tables and report of a failed run")
    p.add_argument("--config-json", required=True)
    p.add_argument("--config-hash", required=True)
    p.add_argument("--cells", required=True, help="the complete table, removed (stale)")
    p.add_argument("--partial", required=True, help="where the partial table goes")
    p.add_argument("--out-dir", required=True, help="tables folder")
    p.add_argument("--out", required=True, help="report.html")
    p.set_defaults(func=_report_after_failure)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except CellsFailed as exc:
        print(f"blurbflow {args.command}: {exc} (see their result.json)", file=sys.stderr)
        return 1
    except Preempted as exc:
        print(f"blurbflow {args.command}: {exc}", file=sys.stderr)
        return 143  # as a process killed by SIGTERM: the scheduler retries, the retry resumes
    except (ValueError, KeyError, FileNotFoundError) as exc:
        print(f"blurbflow {args.command}: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
