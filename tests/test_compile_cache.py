"""Compiled cells (blurbflow.train.compiled; inductor on the CPU, `compile_mode: reduce-overhead`
over one bucket width): the same bits whether the compile cache was cold, warm in the same folder
or loaded from its artifacts into a fresh one; a cell preempted by SIGTERM and resumed ends as an
uninterrupted one; a NaN still ends it `diverged`; and what a step keeps or an evaluation returns
shares no memory with the model's outputs, which a CUDA graph replay overwrites.

The cells run in fresh interpreters (`run_cells`): a process that compiled holds kernels in
memory, which would hide what the folder gave. On the CPU a cold compile of the tiny BERT takes
about a minute (gcc); artifacts carry inductor's graphs but not the C++ kernels built from them,
so a fresh folder builds those again (on a GPU the Triton kernels come bundled)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from blurbflow.tasks import get_task
from blurbflow.train import compiled, engine
from blurbflow.train import predict as predicting
from blurbflow.train.batching import collate
from blurbflow.train.fit import Optimisation, Steps
from blurbflow.train.optim import AdamW, linear_schedule
from blurbflow.train.progress import Progress
from blurbflow.train.shapes import Shapes

from model_helpers import make_options, small_gad_project, tiny_classifier

GRAPHED = {"compile": True, "compile_mode": "reduce-overhead", "shapes": "padded"}
# one interpreter: the engine settings, then each (options, fault, folder) as the job would
RUN = r"""
import json, os, sys
from pathlib import Path
from blurbflow.options import CellOptions
from blurbflow.train import Preempted, engine
from blurbflow.train.cell import train_cell
root, settings, runs = json.loads(sys.argv[1])
engine.use(settings)
for given, fault, out in runs:
    os.environ["BLURBFLOW_FAULT"] = fault or ""
    try:
        train_cell(CellOptions.from_dict(given), Path(root, "encoded"), Path(root, "data/small"),
                   Path(out, "result.json"))
    except Preempted:
        print(out, "preempted", flush=True)
"""


def run_cells(root, cache, runs: list[tuple[int, str | None, str]]) -> str:
    """Train (seed, fault, folder name) cells in one fresh interpreter; its output."""
    settings = {**GRAPHED, "pad_multiple": 128, "compile_cache": str(cache)}  # one width
    given = [
        [cell_options(root, seed).to_dict(), fault, str(root / "cells" / name)]
        for seed, fault, name in runs
    ]
    run = subprocess.run(
        [sys.executable, "-c", RUN, json.dumps([str(root), settings, given])],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "BLURBFLOW_FAULT": ""},
    )
    assert run.returncode == 0, run.stderr[-5000:]
    return run.stdout


def cell_options(root, seed: int):
    return make_options(
        model_source=str(root / "model"),
        lr=1e-3,
        batch_size=16,
        epochs=2,  # the planned faults fire at epoch 2's first step
        seed=seed,
        keep_weights=True,  # weights.pt: every bit of training
    )


@pytest.fixture(scope="module")
def cells(tmp_path_factory):
    """result.json of each cell: `cold`, then `preempted` (SIGTERM at epoch 2) and `nan` in the
    same process; `warm` and `preempted`'s resumption in a fresh one on the same folder; and
    `artifacts` in a fresh process on a folder holding only the first's artifacts."""
    root = small_gad_project(tmp_path_factory.mktemp("compiled"), (64, 32, 32))
    folder, fresh = root / "cache", root / "fresh-cache"
    out = run_cells(
        root, folder, [(1, None, "cold"), (1, "sigterm@*", "preempted"), (2, "nan@*", "nan")]
    )
    assert "preempted preempted" in out
    run_cells(root, folder, [(1, None, "warm"), (1, None, "preempted")])
    shutil.copytree(folder / "artifacts", fresh / "artifacts")
    run_cells(root, fresh, [(1, None, "artifacts")])
    results = {}
    for name in ("cold", "warm", "artifacts", "preempted", "nan"):
        results[name] = json.loads((root / "cells" / name / "result.json").read_text())
        results[name]["weights"] = tensors_sha256(root / "cells" / name / "weights.pt")
    return results


def tensors_sha256(path) -> str:
    """The trained weights' bytes (weights_sha256 digests the file, whose zip names the
    temporary file it was written as)."""
    state, digest = torch.load(path, weights_only=True), hashlib.sha256()
    for name in sorted(state):
        digest.update(name.encode() + state[name].numpy().tobytes())
    return digest.hexdigest()


def bits(result: dict) -> tuple:
    """What a cell's training and evaluation produced, but for timings."""
    records = [{k: v for k, v in r.items() if k != "seconds"} for r in result["epochs"]]
    return result["weights"], result["predictions_sha256"], records


@pytest.mark.slow  # three interpreters, one cold compile and one rebuild of the C++ kernels
def test_a_compiled_cell_gives_the_same_bits_cold_warm_and_from_artifacts(cells):
    starts = {
        name: cells[name]["engine"]["compile_cache"] for name in ("cold", "warm", "artifacts")
    }
    assert {name: s["start"] for name, s in starts.items()} == {
        "cold": "cold",
        "warm": "warm",
        "artifacts": "artifacts",
    }
    assert starts["cold"]["artifacts"] == starts["artifacts"]["artifacts"]  # the same kernel key
    assert all(s["compile_seconds"] > 0 for s in starts.values())
    assert cells["cold"]["engine"]["compile_mode"] == "reduce-overhead"
    assert bits(cells["warm"]) == bits(cells["cold"]) == bits(cells["artifacts"])


@pytest.mark.slow  # shares the cells of the test above
def test_a_compiled_cell_resumed_after_sigterm_matches_an_uninterrupted_one(cells):
    """Dropout on (0.1): inductor's random numbers come from the generator the checkpoint holds."""
    assert cells["preempted"]["status"] == "ok"
    assert bits(cells["preempted"]) == bits(cells["cold"])


@pytest.mark.slow  # shares the cells of the test above
def test_a_nan_under_compile_ends_the_cell_diverged(cells):
    assert cells["nan"]["status"] == "diverged"
    assert cells["nan"]["error"].startswith("loss became nan at epoch 2")


def test_what_a_step_keeps_and_an_evaluation_returns_is_no_output_of_the_model(monkeypatch):
    """A graphed policy's bookkeeping, the model run eagerly: the kept losses and the logits
    decoded share no storage with any output (which a replay would overwrite), and each step and
    evaluation batch starts a graph step. Without graphs, fp32 logits are the output itself."""
    monkeypatch.setattr(compiled, "compile_model", lambda *args: None)
    begun = []
    monkeypatch.setattr(compiled, "step_begins", lambda: begun.append(1))
    model = tiny_classifier(layers=1)
    outputs = []
    model.register_forward_hook(lambda module, args, out: outputs.append(out))
    policy = engine.Policy(
        "torch", "padded", 8, compiled="inductor", compile_mode="reduce-overhead"
    )
    assert policy.graphs and policy.bucketed
    data = {"input_ids": [[2, 5, 6, 3], [2, 7, 3], [2, 8, 9, 10, 11, 3]], "label": [0, 1, 1]}
    data["length"] = [len(x) for x in data["input_ids"]]
    optimizer = AdamW(model.parameters(), lr=1e-3)
    opt = Optimisation(
        model, optimizer, linear_schedule(optimizer, 3, 0.0), torch.device("cpu"), None
    )
    progress = Progress("c", 1, 3, clock=lambda: 0.0, write=lambda line: None)
    steps = Steps(opt, make_options(batching="random"), progress, policy=policy)
    for _ in range(3):
        steps.step(
            data["length"], [0, 1, 2], lambda r: collate(data, r, 0, torch.long), lambda x: x
        )
    assert steps.shapes.graphs and len(begun) == 3 and len(steps.pending) == 3

    def storages(tensors) -> set[int]:
        return {t.untyped_storage().data_ptr() for t in tensors}

    made = storages([out.loss for out in outputs] + [out.logits for out in outputs])
    assert not storages(steps.pending) & made

    decoded = []
    monkeypatch.setattr(
        predicting, "decode", lambda spec, logits, d, rows, scheme: decoded.append(logits) or rows
    )
    for shapes in (steps.shapes, Shapes(torch.device("cpu"))):
        outputs.clear()
        decoded.clear()
        predicting.predict(
            model, get_task("gad"), data, 2, predicting.BatchFormat(0), None, "fp32", shapes
        )
        shared = storages(decoded) & storages(out.logits for out in outputs)
        assert (len(decoded), bool(shared)) == (2, not shapes.graphs)
    assert len(begun) == 3 + 2


def test_the_recompile_limit_covers_every_bucket_width_at_every_batch_size():
    assert compiled.widths(128, 64) == 2 and compiled.widths(100, 64) == 2
    assert compiled.recompile_limit(512, 64) == 8 * (compiled.TRAIN_SIZES + compiled.EVAL_SIZES)
    asked = []

    class Model:
        def compile(self, **kwargs):
            asked.append(kwargs)

    # torch's own patch: monkeypatch's undo of a config module's attribute hides it (delattr)
    graphs = torch._inductor.config.triton
    with (
        torch._dynamo.config.patch(recompile_limit=8, accumulated_recompile_limit=256),
        torch._inductor.config.patch({"triton.cudagraph_skip_dynamic_graphs": False}),
    ):
        compiled.compile_model(Model(), "inductor", "reduce-overhead", 512, 32)
        assert torch._dynamo.config.recompile_limit == 16 * 5
        assert not graphs.cudagraph_skip_dynamic_graphs
        compiled.compile_model(Model(), "inductor", "default", 512, 1)  # no buckets: dynamic
        assert graphs.cudagraph_skip_dynamic_graphs  # and no CUDA graph per shape
    assert asked == [
        {"backend": "inductor", "dynamic": False, "mode": "reduce-overhead"},
        {"backend": "inductor", "dynamic": True},
    ]
