"""The GPU suite: what the engine's current defaults (blurbflow.train.engine, resolved by the code
for CUDA) give a cell on a GPU at steady state, against HF Trainer on the same attention backend,
alone and with 2 and 4 cells sharing the GPU, in one command that writes one JSON and one
markdown table with the targets (benchmarks/README.md, "GPU suite").

Every part runs in fresh processes (this one only starts them, in gpu_plan.py's order, and
merges their JSON), and the JSON and the table are written after each part; a part that fails
or runs out of time is recorded and the next one runs; a part expected to end past `--budget-s`
is skipped and listed. Each row runs its batches twice and reports the second pass.

    .venv/bin/python benchmarks/gpu.py --suite --out gpu-suite.json   # a GPU, ≤ 5 min
    .venv/bin/python benchmarks/gpu.py --suite --smoke                # tiny models, the CPU
    .venv/bin/python benchmarks/gpu.py --plan       # the parts, their expected seconds
    .venv/bin/python benchmarks/gpu.py --lengths    # the shipped lengths, from the mirror
Without CUDA it exits 2 unless given --smoke."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import gpu_plan as plan

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "resources" / "benchmarks" / "gpu-suite.json"
SMOKE_SKIP = "smoke: tests/test_benchmarks.py runs compile_cache.py --smoke apart"
COMPILE_CACHE = HERE / "compile_cache.py"  # time to a first step, cold and warm (its own script)
META = ("device", "torch", "cuda", "cudnn", "transformers")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", action="store_true", help="every part (the default)")
    p.add_argument("--parts", help=f"a comma-separated subset of {','.join(plan.NAMES)}")
    p.add_argument("--smoke", action="store_true", help="tiny models, few steps, the CPU too")
    p.add_argument("--out", type=Path, default=OUT, help="the JSON; the table beside it (.md)")
    p.add_argument("--budget-s", type=float, help=f"skip parts expected to end after this "
                   f"(default {plan.BUDGET_S:.0f}; 900 with --smoke)")  # fmt: skip
    p.add_argument("--plan", action="store_true", help="print the parts and expected seconds")
    p.add_argument("--lengths", action="store_true", help="print the shipped length quantiles")
    p.add_argument("--mirror", type=Path, default=HERE.parents[1] / "shared" / "blurb-raw")
    for hidden in ("--child", "--barrier"):  # a child process's part, a concurrent barrier
        p.add_argument(hidden, help=argparse.SUPPRESS)
    for hidden in ("--processes", "--index"):
        p.add_argument(hidden, type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.plan:
        print(plan.table())
        return 0
    if args.lengths:
        from gpu_lengths import lengths

        lengths(args.mirror)
        return 0
    if args.child:
        return child(args)
    parts = args.parts.split(",") if args.parts else list(plan.NAMES)
    if unknown := set(parts) - set(plan.NAMES):
        p.error(f"--parts: unknown {', '.join(sorted(unknown))}; use {', '.join(plan.NAMES)}")
    return suite(args, parts)


def child(args) -> int:
    """Run one part in this (fresh) process and write its JSON."""
    import torch
    from gpu_parts import meta, run

    from blurbflow.train import device as devices
    from blurbflow.train import engine

    device = devices.select_device()
    if device.type == "cpu":
        torch.set_num_threads(1)  # tiny models: a second thread only adds contention
    if cache := os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        engine.use({"compile_cache": cache})  # the suite's folder, wherever the engine looks
    started = time.perf_counter()
    worker = {"processes": args.processes, "index": args.index, "barrier": args.barrier}
    found = run(args.child, device, args.smoke, worker)
    found.update(meta=meta(device), seconds=round(time.perf_counter() - started, 1))
    args.out.write_text(json.dumps(found, indent=1) + "\n")
    return 0


def suite(args, parts: list[str]) -> int:
    """Start each part's processes in turn, merging and writing the results after each."""
    import gpu_procs as procs
    import torch
    from gpu_policy import BATCH, MAX_LENGTH, case, policy_for

    from blurbflow.train import engine

    if not torch.cuda.is_available() and not args.smoke:
        print("no GPU present (torch.cuda.is_available() is False): run this on a GPU, or pass "
              "--smoke (tiny models, seconds, on the CPU)", file=sys.stderr)  # fmt: skip
        return 2
    budget = args.budget_s or (900.0 if args.smoke else plan.BUDGET_S)
    default = policy_for(case("default"))  # as on a GPU (a smoke run compiles with eager)
    result = {
        **dict.fromkeys(META),
        "host": platform.node(),
        "pid": os.getpid(),  # the parent's: no row is measured in it
        "smoke": args.smoke,
        "batch_size": BATCH,
        "max_length": MAX_LENGTH,
        "default_policy": engine.result_fields(default),
        "budget_s": budget,
        "parts": {},
        "rows": [],
        "seconds": {},
    }
    work = args.out.with_suffix(".parts")  # each part's JSON and log
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    cache = tempfile.mkdtemp(prefix="gpu-suite-inductor-")  # cold at the start, shared after
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "PYTHONUNBUFFERED": "1"}
    base = [sys.executable, __file__] + (["--smoke"] if args.smoke else [])
    started = time.perf_counter()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the children stop with it (finally)
    try:
        for name in parts:
            elapsed = time.perf_counter() - started
            entry = {"expected_s": plan.BY_NAME[name].expected_s}
            if reason := not_run(name, default, elapsed, budget, args.smoke):
                entry["status"] = reason
                print(f"part {name}: {reason}", file=sys.stderr)
                if name == "compile_cache" and reason == "not present":
                    result["compile_cache"] = reason
            else:
                try:
                    merge(result, name, run_part(name, base, work, env, args, elapsed, budget))
                    entry["status"] = "ok"
                except procs.PartFailed as err:
                    entry["status"] = "timed out" if err.timed_out else "failed"
                    result.setdefault("errors", {})[name] = str(err)
                    print(f"part {name} {entry['status']}: {err}", file=sys.stderr)
                entry["seconds"] = round(time.perf_counter() - started - elapsed, 1)
            result["parts"][name] = entry
            table = write(result, args, started)  # after each part: a run cut off keeps the rest
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(table)
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return 1 if result.get("errors") else 0


def not_run(name: str, default, elapsed: float, budget: float, smoke: bool) -> str | None:
    """Why part `name` does not run, or None: the default already is its row, its script is
    not there, or it would end past the budget."""
    if name in ("graphs", "compiled") and default.compiled:
        mode = "reduce-overhead" if name == "graphs" else "default"
        if default.compile_mode == mode:
            return "the default (its row is the default part's)"
    if name == "compile_cache" and not COMPILE_CACHE.exists():
        return "not present"
    if name == "compile_cache" and smoke:  # minutes of CPU compiling; it has a smoke of its own
        return SMOKE_SKIP
    if not plan.fits(name, elapsed, budget):
        expected = plan.BY_NAME[name].expected_s
        return f"skipped: {expected:.0f} s expected, {budget - elapsed:.0f} s left"
    return None


def run_part(name: str, base, work: Path, env: dict, args, elapsed: float, budget: float) -> dict:
    """The part's results from its fresh processes (their JSON)."""
    import gpu_procs as procs

    timeout = plan.timeout_for(name, elapsed, budget, args.smoke)
    if name == "concurrent":
        ks = plan.CONCURRENT_SMOKE if args.smoke else plan.CONCURRENT
        rows, groups = procs.concurrent(base, work, env, timeout, ks)
        return {"rows": rows, "concurrent": groups}
    if name == "compile_cache":
        out, log = work / "compile_cache.json", work / "compile_cache.log"
        command = [sys.executable, str(COMPILE_CACHE), "--out", str(out)] + ["--smoke"] * args.smoke
        own = {k: v for k, v in env.items() if k != "TORCHINDUCTOR_CACHE_DIR"}  # its own folders
        procs.wait_all([(procs.start(command, log, own), log)], timeout)
        return {"compile_cache": json.loads(out.read_text())}
    found = procs.child(base, name, work, env, timeout)
    found["rows"] = [row | {"pid": found["meta"]["pid"]} for row in found["rows"]]
    return found


def merge(result: dict, name: str, found: dict) -> None:
    for key in META:
        result[key] = result[key] or found.get("meta", {}).get(key)
    result["rows"] += found.pop("rows", [])
    for key in ("concurrent", "profile", "syncs", "cell", "compile_cache"):
        if key in found:
            result[key] = found[key]


def write(result: dict, args, started: float) -> str:
    """The JSON and its markdown table as they stand; the table."""
    from gpu_report import markdown, targets

    result["seconds"]["total"] = round(time.perf_counter() - started, 1)
    result["targets"] = targets(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    table = markdown(result)
    args.out.with_suffix(".md").write_text(table)
    return table


if __name__ == "__main__":
    sys.exit(main())
