"""What verifying results costs at paper scale (config.yaml: 12,850 cells in 1,816 jobs).

1. The workflow's stat check when it is read (blurbflow.config.identity.stale_manifests): a
   synthetic tree of 1,816 job manifests recording 12,850 seeds' result.json + predictions.parquet;
   budget: well under 1 s.
2. Aggregation's verification per cell (blurbflow.record.verify.verify_result: sha256 of the
   predictions, re-scoring the test split), timed on predictions of the real test sets (the
   BLURB files under ../shared/blurb-raw, prepared as benchmarks/common.py does) and summed
   over config.yaml's cells per task.

    .venv/bin/python benchmarks/verify_scale.py [--repeat 3]
    .venv/bin/python benchmarks/verify_scale.py --smoke  # 156 cells, generated test sets
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blurbflow.config import cell_jobs, expand_cells  # noqa: E402
from blurbflow.config.identity import seed_records, stale_manifests  # noqa: E402
from blurbflow.record.verify import rescore_test  # noqa: E402
from blurbflow.tasks import get_task  # noqa: E402
from blurbflow.train.predict import gold_labels  # noqa: E402
from blurbflow.util import digests  # noqa: E402

from common import MIRRORED_TASKS, REPO, prepared, smoke_data  # noqa: E402


def smoke_config(config: dict) -> dict:
    """config.yaml cut to Gu Table 6 on BERT and BioBERT, one seed: every BLURB task, 156 cells
    in 156 jobs (the grid of 6 points)."""
    study = {**config["studies"]["gu-table6"], "models": ["bert", "biobert"], "seeds": 1}
    return {**config, "studies": {"gu-table6": study}}


def manifest_tree(root: Path, config: dict) -> list[str]:
    """One folder per job of `config` with a manifest and small seed files (stat is what counts)."""
    manifests = []
    for path, job in cell_jobs(expand_cells(config)).items():
        folder = root / path
        for seed in job.seeds:
            (folder / f"seed{seed}").mkdir(parents=True, exist_ok=True)
            (folder / f"seed{seed}/result.json").write_text('{"status": "ok"}')
            (folder / f"seed{seed}/predictions.parquet").write_bytes(b"PAR1" * 64)
        records = seed_records(folder, job.seeds)
        (folder / "seeds.json").write_text(json.dumps({"seeds": {}, "files": records}))
        manifests.append(str(folder / "seeds.json"))
    return manifests


def time_stat_check(config: dict, repeat: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="blurbflow-verify-"))
    try:
        manifests = manifest_tree(root, config)
        seeds = sum(1 for _ in root.rglob("result.json"))
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            stale = stale_manifests(manifests)
            times.append(time.perf_counter() - start)
        assert stale == [], stale[:3]
        victim = next(root.rglob("predictions.parquet"))
        victim.unlink()
        assert len(stale_manifests(manifests)) == 1
        print(
            f"stat check: {len(manifests)} manifests, {seeds} seeds: "
            f"median {statistics.median(times):.3f} s (min {min(times):.3f}) of {repeat}"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def predictions_file(task: str, folder: Path, data: Path) -> Path:
    """predictions.parquet as train_cell writes it: dev + test, gold and a noisy prediction."""
    spec, rng = get_task(task), random.Random(0)
    rows = []
    for split in ("dev", "test"):
        frame = pd.read_parquet(data / f"{split}.parquet")
        for i, gold in zip(frame["id"].astype(str), gold_labels(spec, frame), strict=True):
            pred = gold + rng.gauss(0, 0.5) if spec.type == "sts" else gold
            rows.append(
                {"id": i, "split": split, "gold": json.dumps(gold), "pred": json.dumps(pred)}
            )
    path = folder / f"{task}.parquet"
    pd.DataFrame(rows, columns=["id", "split", "gold", "pred"]).to_parquet(path)
    return path


def time_verification(config: dict, repeat: int, smoke: bool = False) -> None:
    """`smoke`: on the generated test sets (common.smoke_data) rather than the real ones."""
    per_task = Counter(cell.task for cell in expand_cells(config).values())
    folder = Path(tempfile.mkdtemp(prefix="blurbflow-verify-"))
    total_digest = total_rescore = 0.0
    try:
        for task in sorted(per_task):
            if task not in MIRRORED_TASKS and not smoke:  # (every task is generated)
                print(f"{task:>12}: no mirrored files; counted as the slowest task")
                continue
            data = smoke_data(task, folder / "smoke") if smoke else prepared(task)
            path = predictions_file(task, folder, data)
            digest, rescore = [], []
            for _ in range(repeat):
                digests._DIGESTS.clear()  # the per-process cache of file digests
                start = time.perf_counter()
                digests.file_sha256(path)
                digest.append(time.perf_counter() - start)
                start = time.perf_counter()
                rescore_test(path, task)
                rescore.append(time.perf_counter() - start)
            d, r = statistics.median(digest), statistics.median(rescore)
            total_digest += d * per_task[task]
            total_rescore += r * per_task[task]
            print(
                f"{task:>12}: {path.stat().st_size / 1e6:6.2f} MB, sha256 {d * 1e3:6.1f} ms, "
                f"re-score {r * 1e3:7.1f} ms per cell × {per_task[task]} cells"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    cells = sum(per_task.values())
    print(
        f"{cells} cells: sha256 of every predictions file {total_digest:.1f} s, "
        f"re-scoring every cell {total_rescore:.1f} s ({'generated' if smoke else 'mirrored'} "
        "tasks)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-rescore", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="156 cells, generated data, once")
    args = parser.parse_args()
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    if args.smoke:
        config, args.repeat = smoke_config(config), 1
    time_stat_check(config, args.repeat)
    if not args.skip_rescore:
        time_verification(config, args.repeat, args.smoke)


if __name__ == "__main__":
    main()
