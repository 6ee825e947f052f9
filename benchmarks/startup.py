"""Per-cell start-up: seconds from process start to the first optimizer step, for a blurbflow
cell reading the tokenization cache vs a baseline cell that re-tokenizes its task first (what a
per-run script such as Hugging Face's run_ner.py does). Each run is a fresh interpreter, as a
SLURM job is; real MiniLM-L6 BERT and real BLURB data (default: jnlpba, the largest NER set).

    .venv/bin/python benchmarks/startup.py [--task jnlpba] [--repeats 3]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from blurbflow.models.load import load_tokenizer
from blurbflow.tasks import get_task
from blurbflow.train.encode import encode_task

from common import minilm_path, parser, prepared

# Runs in a fresh interpreter: time imports, then the cell until its first optimizer step.
CELL = r"""
import time; t0 = time.perf_counter()
import json, sys
from pathlib import Path
from blurbflow.train import cell, optim
from blurbflow.train.encode import encode_task
from blurbflow.models.load import load_tokenizer
from blurbflow.tasks import get_task
from transformers import AutoModelForTokenClassification, AutoTokenizer  # noqa: F401
from transformers.models.bert import modeling_bert  # noqa: F401  (lazy in transformers)
t_imports = time.perf_counter()
options, encoded, data, out, retokenize = json.loads(sys.argv[1])
if retokenize:
    encode_task(get_task(options["task"]), Path(data), load_tokenizer(options["model_source"]),
                options["max_length"], Path(encoded))
marks = {}
real_forward = cell.make_batch
def first_batch(*a, **k):  # the cell is ready: its first training batch goes to the model
    marks.setdefault("ready", time.perf_counter())
    return real_forward(*a, **k)
def first_step(self, *a, **k):
    now = time.perf_counter()
    print(json.dumps({"total": now - t0, "after_imports": now - t_imports,
                      "ready_total": marks["ready"] - t0, "ready": marks["ready"] - t_imports}))
    sys.exit(0)
cell.make_batch = first_batch
optim.AdamW.step = first_step
cell.train_cell(options, Path(encoded), Path(data), Path(out))
"""


def run(options: dict, encoded: Path, data: Path, out: Path, retokenize: bool) -> dict:
    args = json.dumps([options, str(encoded), str(data), str(out), retokenize])
    proc = subprocess.run([sys.executable, "-c", CELL, args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--task", default="jnlpba")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    spec, model = get_task(args.task), minilm_path()
    data = prepared(args.task, args.mirror)
    options = {
        "model": "minilm",
        "model_source": model,
        "task": args.task,
        "recipe": "standard",
        "hparams": "bench",
        "lr": 5e-5,
        "batch_size": 32,
        "epochs": 1,
        "max_length": spec.max_length,
        "seed": 1,
        "code_version": "bench",
    }
    with tempfile.TemporaryDirectory() as tmp:
        cached = Path(tmp) / "cached"
        encode_task(spec, data, load_tokenizer(model), spec.max_length, cached)
        results = {"cached (blurbflow)": [], "re-tokenizing baseline": []}
        for _ in range(args.repeats):
            results["cached (blurbflow)"].append(
                run(options, cached, data, Path(tmp) / "a/r.json", False)
            )
            results["re-tokenizing baseline"].append(
                run(options, Path(tmp) / "fresh", data, Path(tmp) / "b/r.json", True)
            )
    medians = {
        name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for name, runs in results.items()
    }
    base, ours = medians["re-tokenizing baseline"], medians["cached (blurbflow)"]
    columns = (
        ("first batch, process", "ready_total"),
        ("first batch, after imports", "ready"),
        ("first optimizer step, process", "total"),
        ("first optimizer step, after imports", "after_imports"),
    )
    print(f"{args.task}: seconds from start to ... (median of {args.repeats} fresh processes)")
    for label, key in columns:
        print(
            f"  {label:38} cached {ours[key]:6.2f}  re-tokenizing {base[key]:6.2f}  "
            f"ratio {ours[key] / base[key]:.3f}"
        )


if __name__ == "__main__":
    main()
