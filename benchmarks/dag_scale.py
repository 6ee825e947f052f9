"""How long Snakemake takes to plan the full paper config (every study, every seed), on the
real workflow with the real config.yaml, when (a) everything is up to date, locally and through
`--profile slurm` (the SLURM executor plugin's start-up included), and (b) one recipe option
changed (issue 6: ≤ 15 s each on the 2-core reference machine).

Every output is first produced by a real Snakemake run (so its metadata exists and params
changes are detected), with a stand-in for the rules' steps (a `blurbflow` package first on
PYTHONPATH whose `steps` module, which every script in workflow/scripts/ calls, writes each rule's
declared outputs instead of downloading, training or aggregating; every other module is the real
one). The timed dry runs use the caller's
environment unchanged (PATH decides whether SLURM's clients are found). `--workdir` keeps the
built folder, so a second call (e.g. with SLURM clients on PATH) times without rebuilding.

    .venv/bin/python benchmarks/dag_scale.py [--recipe tinn-llrd] [--repeat 3] [--workdir DIR]

`--smoke`: the same steps, once each, on config.yaml cut to a few jobs (`smoke_config`).

`--scales 1,2,4`: how the cost grows instead: the literal dry run (`snakemake -n all`, nothing
built) of config.yaml with its studies once, twice and four times (`scaled_config`: each copy
on copies of the models, as many jobs again), median of `--repeat` whole processes each, beside
Snakemake alone on a minimal Snakefile of the same jobs (snakemake_floor.py).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
import blurbflow  # noqa: E402
from blurbflow.config import cell_jobs, expand_cells  # noqa: E402

from workflow_helpers import copy_workflow, planned_jobs  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from snakemake_floor import floor_workflow, job_counts  # noqa: E402

# The stand-in package: the real one (its folder second on __path__), but for its steps module.
STAND_IN_INIT = """import os
__path__.append({real!r})
exec(open(os.path.join({real!r}, "__init__.py")).read())
"""
STAND_IN = """# Writes the outputs a rule's step would, and nothing else (dag_scale.py).
import json, pathlib, sys

NAMES = ("generate", "fetch", "prepare", "build_model", "prefetch", "prefetch_check",
         "tokenize", "finetune", "aggregate", "tables", "report", "report_after_failure",
         "stage_bytes")


def write(path):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")


def _step(name):
    def step(**kwargs):
        pass

    step.__name__ = name
    return step


globals().update({name: _step(name) for name in NAMES})


def run_in_process(log, step, **kwargs):
    return 0


def run_rule(log, step, **kwargs):
    command, out = step.__name__, kwargs.get("out")
    if command == "prepare":
        for name in ("train.parquet", "dev.parquet", "test.parquet", "stats.json"):
            write(pathlib.Path(out, name))
    elif command == "tables":
        for study in kwargs["config"]["studies"]:
            # as the tables rule writes
            for ext in ("csv", "md", "tex", "reproduction.csv", "comparisons.csv"):
                write(pathlib.Path(kwargs["out_dir"], study + "." + ext))
            results = kwargs.get("results_dir") or pathlib.Path(kwargs["out_dir"]).parent
            write(pathlib.Path(results, study + ".json"))  # results/{study}.json
    elif command == "prefetch":  # a marker whose (empty) snapshot is complete
        write(out)
        pathlib.Path(out).write_text(json.dumps({"snapshot": ".", "files": []}))
    elif command == "finetune":  # each seed's files, recorded in the manifest as a real job does
        from blurbflow.config.identity import SEED_FILES, seed_records

        for seed in kwargs["seeds"]:
            for name in SEED_FILES:
                write(pathlib.Path(out).parent / f"seed{seed}" / name)
        records = seed_records(pathlib.Path(out).parent, kwargs["seeds"])
        pathlib.Path(out).write_text(json.dumps({"files": records}))
    elif out is None:
        pass
    elif pathlib.Path(out).suffix:
        write(out)
    else:
        write(pathlib.Path(out, "done"))
    sys.exit(0)
"""


def smoke_config(config: dict) -> dict:
    """config.yaml cut to 3 fine-tuning jobs: Tinn Table 4 on PubMedBERT and BIOSSES, recipes
    tinn-improved and tinn-llrd (2 jobs: its decay factors), 2 seeds; the standard recipe's
    lr x batch-size grid (which every recipe here extends) cut to one point."""
    config = copy.deepcopy(config)
    config["recipes"]["standard"].update(lr=3e-5, batch_size=32)
    study = config["studies"]["tinn-table4"]
    study.update(models=["pubmedbert"], tasks=["biosses"], seeds=2)
    study["recipes"] = ["tinn-improved", "tinn-llrd"]
    config["studies"] = {"tinn-table4": study}
    return config


def _renamed(value, names: dict):
    """`value` with every string (list item, mapping key or value) in `names` renamed."""
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, list):
        return [_renamed(item, names) for item in value]
    if isinstance(value, dict):
        return {names.get(k, k): _renamed(v, names) for k, v in value.items()}
    return value


def scaled_config(config: dict, factor: int) -> dict:
    """config.yaml with its studies `factor` times: copy k (2..factor) runs every study on
    copies of its models (`{model}-x{k}`, the same entry), so each copy adds as many
    fine-tuning and tokenization jobs as the original has (the data and downloads are shared)."""
    config = copy.deepcopy(config)
    models, studies = dict(config["models"]), dict(config["studies"])
    for k in range(2, factor + 1):
        names = {model: f"{model}-x{k}" for model in models}
        config["models"].update({names[m]: copy.deepcopy(spec) for m, spec in models.items()})
        config["studies"].update({f"{n}-x{k}": _renamed(s, names) for n, s in studies.items()})
    return config


# The config's size limit (blurbflow.config.validate.MAX_CELLS) raised for the scaled configs: 4x
# config.yaml's studies are more cells than a config may have.
STAND_IN_VALIDATE = """import os
exec(open(os.path.join({real!r}, "validate.py")).read())
MAX_CELLS = 10**7
"""


def scales(config: dict, factors: list[int], repeat: int) -> None:
    """The literal dry run's seconds at each factor, in a fresh copy of the workflow each, and
    Snakemake's own on a minimal Snakefile of the same jobs (snakemake_floor.py)."""
    first = first_floor = None
    for factor in factors:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = copy_workflow(Path(tmp) / "wf")
            (workdir / "config.yaml").write_text(yaml.safe_dump(scaled_config(config, factor)))
            stand_in, real = Path(tmp) / "stand-in", Path(blurbflow.__file__).parent
            (stand_in / "blurbflow/config").mkdir(parents=True)
            for package in ("", "config/"):  # each the real one, its folder second on __path__
                init = STAND_IN_INIT.format(real=str(real / package))
                (stand_in / f"blurbflow/{package}__init__.py").write_text(init)
            (stand_in / "blurbflow/config/validate.py").write_text(
                STAND_IN_VALIDATE.format(real=str(real / "config"))
            )
            times, output = timed(repeat, workdir, "-n", "all", stand_in=stand_in)
            floor_args = floor_workflow(Path(tmp) / "floor", job_counts(output))
            floor, floor_output = timed(repeat, Path(tmp) / "floor", *floor_args)
        jobs, floor_jobs = total_jobs(output), total_jobs(floor_output)
        median, floor_median = statistics.median(times), statistics.median(floor)
        first, first_floor = first or median, first_floor or floor_median
        print(
            f"{factor}x the studies: {jobs} jobs, `snakemake -n all` median {median:.1f} s "
            f"({', '.join(f'{t:.1f}' for t in times)}), {median / first:.2f}x the first; "
            f"Snakemake alone on {floor_jobs} jobs of the same shape {floor_median:.1f} s "
            f"({', '.join(f'{t:.1f}' for t in floor)}), {floor_median / first_floor:.2f}x"
        )


def total_jobs(dry_run_output: str) -> int:
    return int(re.search(r"^total\s+(\d+)$", dry_run_output, re.M).group(1))


def timed(repeat: int, workdir: Path, *args: str, stand_in: Path | None = None):
    """Seconds of each of `repeat` whole `snakemake` processes, and the last one's output."""
    times, output = [], ""
    for _ in range(repeat):
        seconds, output = snakemake(workdir, *args, stand_in=stand_in)
        times.append(seconds)
    return times, output


def snakemake(workdir: Path, *args: str, stand_in: Path | None = None) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(stand_in)} if stand_in else None
    start = time.perf_counter()
    run = subprocess.run(
        [str(Path(sys.executable).parent / "snakemake"), *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(args)} failed:\n{run.stderr[-3000:]}")
    return seconds, run.stdout + run.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", default="tinn-llrd", help="the recipe whose option changes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, help="keep (or reuse) the built workflow here")
    parser.add_argument("--up-to-date-only", action="store_true", help="skip the edited config")
    parser.add_argument("--smoke", action="store_true", help="a 3-job config, one repeat")
    parser.add_argument("--scales", help="factors of the studies to time, e.g. 1,2,4")
    args = parser.parse_args()

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    if args.scales:
        factors = [int(f) for f in args.scales.split(",")]
        repeat = 1 if args.smoke else args.repeat
        return scales(smoke_config(config) if args.smoke else config, factors, repeat)
    if args.smoke:
        config, args.repeat = smoke_config(config), 1
    cells = expand_cells(config)
    jobs = cell_jobs(cells)
    edited = copy.deepcopy(config)
    recipe = edited["recipes"][args.recipe]
    recipe["weight_decay"] = float(recipe.get("weight_decay", 0.01)) + 0.001
    after = cell_jobs(expand_cells(edited))  # the recipe and every recipe extending it
    changed_jobs = {path for path, job in jobs.items() if job.options != after[path].options}
    changed_cells = sum(len(jobs[path].seeds) for path in changed_jobs)
    print(
        f"{'smoke' if args.smoke else 'default'} config: {len(cells)} cells in {len(jobs)} "
        f"fine-tuning jobs; recipe {args.recipe}: {changed_cells} cells in {len(changed_jobs)} jobs"
    )

    with contextlib.ExitStack() as stack:
        root = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        workdir, stand_in = root / "wf", root / "stand-in"
        if not (workdir / "results/report.html").exists():
            copy_workflow(workdir)
            if args.smoke:
                (workdir / "config.yaml").write_text(yaml.safe_dump(config))
            (stand_in / "blurbflow").mkdir(parents=True, exist_ok=True)
            real = str(Path(blurbflow.__file__).parent)
            (stand_in / "blurbflow/__init__.py").write_text(STAND_IN_INIT.format(real=real))
            (stand_in / "blurbflow/steps.py").write_text(STAND_IN)
            seconds, _ = snakemake(
                workdir, "all", "--cores", "2", "--quiet", "rules", stand_in=stand_in
            )
            print(f"building every output with the stand-in: {seconds:.0f} s")

        for label, extra in (("", ()), (" with --profile slurm", ("--profile", "slurm"))):
            up_to_date, output = timed(
                args.repeat, workdir, "-n", *extra, "all", "--quiet", "rules"
            )
            assert "Nothing to be done" in output, output[-2000:]
            print(
                f"dry run{label}, everything up to date: median "
                f"{statistics.median(up_to_date):.1f} s "
                f"({', '.join(f'{t:.1f}' for t in up_to_date)})"
            )

        if args.up_to_date_only:
            return
        (workdir / "config" / "edited.yaml").write_text(yaml.safe_dump(edited))
        edited_run = ("all", "--configfile", "config/edited.yaml", "--quiet", "rules")
        changed, output = timed(args.repeat, workdir, "-n", *edited_run)
        planned = int(re.search(r"^finetune\s+(\d+)$", output, re.M).group(1))
        print(
            f"dry run after {args.recipe}.weight_decay changed: median "
            f"{statistics.median(changed):.1f} s ({', '.join(f'{t:.1f}' for t in changed)}); "
            f"{planned} fine-tuning jobs planned"
        )
        _, listing = snakemake(workdir, "-n", "--configfile", "config/edited.yaml")
        listed = planned_jobs(listing)
        finetuned = {path.rsplit("/", 1)[0] for path in listed.pop("finetune")}
        assert finetuned == changed_jobs, (len(finetuned), len(changed_jobs))
        assert set(listed) <= {"aggregate", "tables", "report", "all"}, set(listed)
        print(
            f"planned exactly the {len(changed_jobs)} jobs ({changed_cells} cells) of "
            f"{args.recipe}, plus {sorted(listed)}"
        )
    if args.smoke:  # the growth too, in the same smoke run
        scales(config, [1, 2], 1)


if __name__ == "__main__":
    main()
