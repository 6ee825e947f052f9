"""A compiled cell (`engine.compile`, docs/engine.md "On a GPU"): how the model is compiled, the
CUDA graphs of `compile_mode: reduce-overhead`, and the compile cache a run's jobs share.

Shapes. Bucketed batches (`padded`, `pad_multiple` > 1) compile one static graph per (width,
batch size): `dynamic=False`, and dynamo's recompile limit raised to the cell's count of them
(`recompile_limit`); past the limit dynamo would run new shapes eagerly, so which batches ran
compiled would depend on what the process saw before. Other shapes compile one dynamic graph
from the first batch (`dynamic=True`), run without CUDA graphs. Either way the kernels of a
batch do not depend on the batches before it, nor on shapes an earlier run profiled (dynamo's
PGO cache): a resumed cell runs the kernels of an uninterrupted one.

Graphs. A replay writes its outputs into the graphs' memory pool, where the next replay writes
again: each training step and evaluation batch starts with `cudagraph_mark_step_begin`, a step's
loss reaches `Steps.pending` through arithmetic (a new tensor) and evaluation copies its logits.

Dropout. Inductor draws a graph's random numbers from seeds that one `randint` per call takes
from the device's default generator (and a graph replay advances that generator as the eager
kernels would), so the checkpoint's torch and CUDA RNG states cover them. Not covered: layers
that `gradient_checkpointing` recomputes, on CUDA: AOTAutograd gives them generators of their
own, seeded at the first step of the process (a resumed cell's dropout there differs).

Cache. `compile_cache` (a folder; auto: resources/compile-cache under the run's folder) holds
inductor's caches (`inductor/`: FX graph and AOTAutograd entries; `triton/`) and, per kernel
set, torch's portable cache artifacts (`artifacts/{key}.bin`, written after an evaluation that
compiled something and loaded at the next cell's start). Jobs may share it at once: an entry is
named by a digest of what it compiles (graph, shapes, config, torch, Triton and device) and
written to a temporary file, then renamed into place (torch's graphs and Triton kernels, and our
artifacts), so a reader sees a whole entry or none; an unreadable graph entry is compiled again.
The CPU's C++ kernels are built in place under a file lock: a job killed while gcc writes one
leaves a file that fails to load (docs/troubleshooting.md: delete the folder). The cell's result
records how it started: `cold` (everything compiled), `warm` (all from the folder), `artifacts`
(from the artifacts, into a folder that held none) or `partial`."""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

import torch

from blurbflow.util.io import atomic_path

GRAPH_MODES = ("reduce-overhead", "max-autotune")  # inductor's modes that replay CUDA graphs
TRAIN_SIZES = 2  # training batches: full, and an epoch's last
EVAL_SIZES = 3  # evaluation batches: full, and dev's and test's last
HITS = (("inductor", "fxgraph_cache_hit"), ("aot_autograd", "autograd_cache_hit"))
MISSES = (
    ("inductor", "fxgraph_cache_miss"),
    ("inductor", "fxgraph_cache_bypass"),
    ("aot_autograd", "autograd_cache_miss"),
    ("aot_autograd", "autograd_cache_bypass"),
)


def widths(max_length: int, pad_multiple: int) -> int:
    """How many widths bucketed batches take: multiples of pad_multiple, and max_length."""
    return -(-int(max_length) // int(pad_multiple))


def recompile_limit(max_length: int, pad_multiple: int) -> int:
    """Graphs a bucketed cell compiles at most: every width at every batch size it runs."""
    return widths(max_length, pad_multiple) * (TRAIN_SIZES + EVAL_SIZES)


def compile_model(model, backend: str, mode: str, max_length: int, pad_multiple: int) -> None:
    """model.compile for the cell: static graphs over bucket widths (`pad_multiple` > 1) with
    the recompile limit raised to cover them, else one dynamic graph (the module's note).
    torch.compile's modes are inductor's (the config check refuses one with another backend)."""
    kwargs = {} if mode == "default" else {"mode": mode}
    bucketed = pad_multiple > 1
    # CUDA graphs only over the few static shapes: a dynamic graph would record one per shape
    torch._inductor.config.triton.cudagraph_skip_dynamic_graphs = not bucketed
    if bucketed:
        config, limit = torch._dynamo.config, recompile_limit(max_length, pad_multiple)
        config.recompile_limit = max(config.recompile_limit, limit)
        config.accumulated_recompile_limit = max(config.accumulated_recompile_limit, limit)
    model.compile(backend=backend, dynamic=not bucketed, **kwargs)


def step_begins() -> None:
    """A training step or evaluation batch starts: earlier replays' outputs may be overwritten."""
    torch.compiler.cudagraph_mark_step_begin()


def warn_recomputed_dropout(model, device: torch.device) -> None:
    """Say where a resumed compiled cell may differ (the module's note on dropout)."""
    if device.type == "cuda" and getattr(model, "is_gradient_checkpointing", False):
        print(
            "engine.compile with gradient_checkpointing on CUDA: dropout in recomputed layers "
            "uses generators a checkpoint does not hold; a resumed cell may differ from an "
            "uninterrupted one",
            flush=True,
        )


def use_folder(folder: Path) -> None:
    """Point inductor's and Triton's caches into `folder`, the FX graph and AOTAutograd caches
    on, before anything compiles in the process (compile workers inherit the environment)."""
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder / "inductor")
    os.environ["TRITON_CACHE_DIR"] = str(folder / "triton")
    torch._inductor.config.fx_graph_cache = True
    torch._functorch.config.enable_autograd_cache = True


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu-{platform.machine()}"


def kernel_key(model, device: torch.device, facts: dict) -> str:
    """A digest of what decides the compiled kernels: torch, the device, the model's layers and
    config (not its weights, which are graph inputs) and `facts` (policy, precision, shapes)."""
    config = {k: v for k, v in model.config.to_dict().items() if k != "_name_or_path"}
    given = {
        "torch": torch.__version__,
        "device": device_name(device),
        "layers": hashlib.sha256(repr(model).encode()).hexdigest(),
        "config": config,
        **facts,
    }
    text = json.dumps(given, sort_keys=True, default=str)
    return f"{config.get('model_type', 'model')}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def _count(names) -> int:
    from torch._dynamo.utils import counters

    return sum(counters[group][name] for group, name in names)


@dataclass
class CompileCache:
    """A compiled cell's cache: `begin` before the first step, `evaluated` after each
    evaluation, `record` for result.json's `engine`."""

    setting: str | None  # the folder as configured (relative to the run's folder); None: torch's
    key: str
    folder: Path | None = None
    loaded: bool = False  # artifacts were loaded at the start
    fresh: bool = False  # the folder held no compiled graph before
    base: tuple[int, int] = (0, 0)  # cache hits and misses before the cell
    saved: int = 0  # the cell's misses when its artifacts were last written
    state: dict = field(default_factory=dict)

    @classmethod
    def begin(cls, setting: str | None, key: str) -> CompileCache:
        """Forget the graphs of earlier cells in this process (each cell compiles, from the cache,
        as a fresh process would), point the caches at the folder and load its artifacts."""
        torch._dynamo.reset()
        cache = cls(setting, key)
        if setting is not None:
            cache.folder = Path(setting).absolute()
            use_folder(cache.folder)
            graphs = cache.folder / "inductor" / "fxgraph"
            cache.fresh = not (graphs.is_dir() and any(graphs.iterdir()))
            if cache.artifacts.is_file():
                info = torch.compiler.load_cache_artifacts(cache.artifacts.read_bytes())
                cache.loaded = info is not None and not info.empty()
        cache.base = (_count(HITS), _count(MISSES))
        return cache

    @property
    def artifacts(self) -> Path:
        return (self.folder or Path(".")) / "artifacts" / f"{self.key}.bin"

    def counts(self) -> tuple[int, int]:
        return _count(HITS) - self.base[0], _count(MISSES) - self.base[1]

    def evaluated(self) -> None:
        """Write the artifacts after an evaluation that compiled something (or when the folder
        has none for this key): what a cell on a fresh folder loads to start warm."""
        misses = self.counts()[1]
        if self.folder is None or (misses == self.saved and self.artifacts.is_file()):
            return
        saved = torch.compiler.save_cache_artifacts()
        if saved is not None:
            with atomic_path(self.artifacts) as tmp:
                tmp.write_bytes(saved[0])
            self.saved = misses

    def start(self) -> str | None:
        hits, misses = self.counts()
        if not hits and not misses:
            return None  # nothing compiled yet
        if misses:
            return "partial" if hits else "cold"
        return "artifacts" if self.loaded and self.fresh else "warm"

    def record(self) -> dict:
        from torch._dynamo.utils import calculate_time_spent

        seconds = calculate_time_spent().get("total_wall_time")
        return {
            "folder": self.setting,
            "start": self.start(),
            "compile_seconds": round(seconds, 2) if seconds is not None else None,
            "artifacts": self.key if self.folder is not None else None,
        }
