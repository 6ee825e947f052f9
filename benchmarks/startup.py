"""Per-cell start-up: seconds from process start to the first optimizer step, for a blurbflow
cell reading the tokenization cache vs a baseline cell that re-tokenizes its task first (what a
per-run script such as Hugging Face's run_ner.py does). Each run is a fresh interpreter, as a
SLURM job is; real MiniLM-L6 BERT and real BLURB data (default: jnlpba, the largest NER set).

    .venv/bin/python benchmarks/startup.py [--task jnlpba] [--repeats 3]

`--entry` times what a job's process spends before it calls the library, as the `finetune`
rule starts it: through a `shell:` template calling the CLI (`bash -c "python -m blurbflow
finetune --options '<json>' …"`, the rules before workflow/scripts/) against Snakemake's
`script:` (bash runs the interpreter on the script Snakemake wrote: its preamble unpickling the
job's values, the whole config included, then workflow/scripts/finetune.py). The library call is
a stand-in that records the time, so both sides stop at the same point; the real cell's imports
and work after it are the same for both.

    .venv/bin/python benchmarks/startup.py --entry [--repeats 10]

`--smoke` (with or without `--entry`): one repeat; the cells on the task's generated data and a
tiny BERT built in a scratch folder.
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from blurbflow.models.load import load_tokenizer
from blurbflow.options import CellOptions, InputOptions
from blurbflow.tasks import get_task
from blurbflow.train.encode import encode_task

from common import REPO, minilm_path, parser, prepared, smoke_data, tiny_model

# Runs in a fresh interpreter: time imports, then the cell until its first optimizer step.
CELL = r"""
import time; t0 = time.perf_counter()
import json, sys
from pathlib import Path
from blurbflow.train import cell, optim
from blurbflow.train import fit as loop
from blurbflow.train.encode import encode_task
from blurbflow.models.load import load_tokenizer
from blurbflow.options import CellOptions
from blurbflow.tasks import get_task
from transformers import AutoModelForTokenClassification, AutoTokenizer  # noqa: F401
from transformers.models.bert import modeling_bert  # noqa: F401  (lazy in transformers)
t_imports = time.perf_counter()
given, encoded, data, out, retokenize = json.loads(sys.argv[1])
options = CellOptions.from_dict(given)
if retokenize:
    encode_task(get_task(options.task), Path(data), load_tokenizer(options.model_source),
                options.inputs, Path(encoded))
marks = {}
real_step = loop.Steps.step
def first_batch(*a, **k):  # the cell is ready: its first training batch goes to the model
    marks.setdefault("ready", time.perf_counter())
    return real_step(*a, **k)
def first_step(self, *a, **k):
    now = time.perf_counter()
    print(json.dumps({"total": now - t0, "after_imports": now - t_imports,
                      "ready_total": marks["ready"] - t0, "ready": marks["ready"] - t_imports}))
    sys.exit(0)
loop.Steps.step = first_batch  # packed or micro-batched, every batch is a Steps.step
optim.AdamW.step = first_step
cell.train_cell(options, Path(encoded), Path(data), Path(out))
"""


def run(options: CellOptions, encoded: Path, data: Path, out: Path, retokenize: bool) -> dict:
    args = json.dumps([options.to_dict(), str(encoded), str(data), str(out), retokenize])
    proc = subprocess.run([sys.executable, "-c", CELL, args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Stand-ins (first on PYTHONPATH): the real package, but run_cell_job records the time and exits.
STAND_IN_INIT = """import os
__path__.append({real!r})
exec(open(os.path.join({real!r}, "__init__.py")).read())
"""
STAND_IN_JOB = """import os, time
def run_cell_job(*args, **kwargs):
    open(os.environ["STARTUP_MARK"], "w").write(repr(time.time()))
    os._exit(0)
"""


def _script_file(folder: Path, options: dict) -> Path:
    """The file Snakemake's `script:` runs for a finetune job: its preamble, then the script."""
    from snakemake.iocontainers import InputFiles, Log, OutputFiles, Params, ResourceList, Wildcards
    from snakemake.script import PythonScript
    from snakemake.sourcecache import LocalSourceFile

    script = REPO / "workflow/scripts/finetune.py"
    job = {"options": options, "seeds": [1, 2, 3, 4, 5], "data": str(folder / "data")}
    preamble = PythonScript.generate_preamble(
        LocalSourceFile(str(script)),
        None,
        script.read_text(),
        str(script.parent),
        InputFiles(fromdict={"encoded": str(folder / "encoded")}),
        OutputFiles([str(folder / "job/seeds.json")]),
        Params(fromdict={"job": job}),
        Wildcards(fromdict={"task": options["task"]}),
        1,
        ResourceList(fromdict={"_cores": 1}),
        Log([str(folder / "job.log")]),
        yaml.safe_load((REPO / "config.yaml").read_text()),
        "finetune",
        None,
        None,
        None,
        None,
        None,
        1,
        None,
        True,
        None,
        True,
    )
    path = folder / "tmp.finetune.py"
    path.write_text(preamble + script.read_text())
    return path


def entry(repeats: int) -> None:
    import blurbflow

    # a job's options as the rule's params carry them (serialised, every key, seed left out)
    job = CellOptions.from_dict(
        {
            "model": "pubmedbert",
            "model_source": "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract",
            "task": "jnlpba",
            "recipe": "standard",
            "hparams": "lr3e-05-bs32",
            "lr": 3e-5,
            "batch_size": 32,
            "epochs": 5,
            "max_length": 512,
            "code_version": "1",
        }
    )
    options = dict(sorted(job.to_dict().items()))
    with tempfile.TemporaryDirectory() as tmp:
        folder, real = Path(tmp), Path(blurbflow.__file__).parent
        (folder / "stand-in/blurbflow/train").mkdir(parents=True)
        (folder / "stand-in/blurbflow/__init__.py").write_text(STAND_IN_INIT.format(real=str(real)))
        (folder / "stand-in/blurbflow/train/__init__.py").write_text(
            STAND_IN_INIT.format(real=str(real / "train"))
        )
        (folder / "stand-in/blurbflow/train/job.py").write_text(STAND_IN_JOB)
        cli = (
            f"{shlex.quote(sys.executable)} -m blurbflow finetune --threads 1 "
            f"--options {shlex.quote(json.dumps(options))} --seeds 1,2,3,4,5 --encoded "
            f"{folder}/encoded --data {folder}/data --out {folder}/job/seeds.json "
            f"> {folder}/job.log 2>&1"
        )
        script = f"{shlex.quote(sys.executable)} {_script_file(folder, options)}"
        env = {
            **os.environ,
            "PYTHONPATH": str(folder / "stand-in"),
            "STARTUP_MARK": str(folder / "mark"),
        }
        times: dict[str, list[float]] = {"shell: + CLI (before)": [], "script: (after)": []}
        for _ in range(repeats):
            for name, command in zip(times, (cli, script), strict=True):
                start = time.time()
                subprocess.run(["bash", "-c", f"set -euo pipefail; {command}"], env=env, check=True)
                times[name].append(float((folder / "mark").read_text()) - start)
    print(f"finetune job process start to the library call (median of {repeats}):")
    for name, values in times.items():
        print(f"  {name:24} {statistics.median(values):.3f} s  (min {min(values):.3f})")


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--task", default="jnlpba")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--entry", action="store_true", help="time the rule's entry point only")
    args = p.parse_args()
    if args.smoke:
        args.repeats = 1
    if args.entry:
        return entry(args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        cells(args, Path(tmp))


def cells(args, tmp: Path) -> None:
    """Time the cached and the re-tokenizing cell, each in fresh processes; `tmp`: scratch."""
    spec = get_task(args.task)
    if args.smoke:
        data, model = smoke_data(args.task, tmp), tiny_model(tmp, [args.task])
    else:
        data, model = prepared(args.task, args.mirror), minilm_path()
    options = CellOptions(
        model="minilm",
        model_source=model,
        task=args.task,
        recipe="standard",
        hparams="bench",
        lr=5e-5,
        batch_size=32,
        epochs=1,
        inputs=InputOptions(max_length=spec.max_length),
        seed=1,
        code_version="bench",
    )
    cached = tmp / "cached"
    encode_task(spec, data, load_tokenizer(model), options.inputs, cached)
    results = {"cached (blurbflow)": [], "re-tokenizing baseline": []}
    for _ in range(args.repeats):
        results["cached (blurbflow)"].append(run(options, cached, data, tmp / "a/r.json", False))
        results["re-tokenizing baseline"].append(
            run(options, tmp / "fresh", data, tmp / "b/r.json", True)
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
