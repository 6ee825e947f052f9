"""Seconds per seed from finished cells. A seed's work is the tokens it trains on plus a third
of those it evaluates (an evaluation is a forward pass only), in units of 256,000 tokens: one
epoch of 1,000 instances padded to 256, blurbflow.cluster's unit, which is also the fallback
where the tokens are unknown (epochs × instances × max_length: a result.json written before
blurbflow recorded its `tokens`, or a job whose data is not tokenized yet). Each ok result.json
gives one (work, wall_seconds) sample; per (model size, device) a line `seconds = a + b · f ·
work` is fitted by least squares with a, b ≥ 0 (a: the per-seed overhead of loading and
writing; b: seconds per unit of work), where f is a factor per task that has at least MIN_CELLS
finished cells on that device (what the tokens do not say: a head's or a decoder's cost),
fitted together with the lines; a model and task with MIN_CELLS cells of its own has its own
factor. A size (a model's parameter count, blurbflow.plan.params, or its `size` class) with no
finished cell takes the best-calibrated size's line scaled by the ratio of their priors, and with
none at all its prior: its parameter count at the published rate of blurbflow.plan.params (a
size class the config's `resources` lists: that table's rate, blurbflow.cluster). A cell that
shared its GPU with others of its job (result.json's engine.cells_sharing, on average) counts
the seconds it would have taken alone at the prior's gain (blurbflow.gpu_share.GAIN)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass

from blurbflow.cluster import SEED_OVERHEAD_MINUTES, size_row
from blurbflow.gpu_share import gain
from blurbflow.plan import params as sizing

TABLE_DEVICE = "GPU (prior)"
MIN_CELLS = 3  # finished cells a task (or a model's task) needs for a factor of its own
ITERATIONS = 50  # rounds of the sizes' lines and the tasks' factors fitted in turn
FACTOR_RANGE = (0.05, 20.0)


TOKENS_PER_UNIT = 256_000
EVAL_SHARE = 1 / 3  # an evaluated token's cost against a trained one (forward, no backward)


def work(epochs: float, instances: float, max_length: int, train_scale: float = 1.0) -> float:
    """Units of work of one seed with every instance padded to max_length (blurbflow.cluster's
    minutes are this × the table's rate): the fallback where its tokens are unknown."""
    return train_scale * epochs * instances / 1000 * max_length / 256


def token_work(
    epochs: float,
    train_tokens: float,
    evaluations: float,
    eval_tokens: float,
    train_scale: float = 1.0,
) -> float:
    """Units of work of one seed from its tokens: `train_tokens` per epoch, `eval_tokens` per
    evaluation (dev and test). `train_scale`: a trained token's cost against full fine-tuning's
    (LoRA, gradient checkpointing: blurbflow.plan.params.token_flops / 6)."""
    trained = train_scale * epochs * train_tokens
    return (trained + EVAL_SHARE * evaluations * eval_tokens) / TOKENS_PER_UNIT


@dataclass(frozen=True)
class Sample:
    """One finished cell's timing."""

    job: str  # its job folder
    model: str
    task: str
    size: str
    device: str
    work: float
    seconds: float
    fill: float | None = None  # unpadded tokens per instance / max_length; None: not recorded


def trained_epochs(result: dict, instances: int) -> float:
    """Epochs the cell trained: its last evaluation's (an early stop trains fewer than
    `epochs`), with `eval_every_steps` the last evaluated step over steps per epoch."""
    options = result["options"]
    records = result.get("epochs") or []
    if not records:
        return float(options["epochs"])
    last = records[-1]
    if last.get("step") and options.get("batch_size"):
        return last["step"] / math.ceil(instances / int(options["batch_size"]))
    return float(last.get("epoch") or options["epochs"])


def sample_of(
    result: dict, job: str, model: str, task: str, size: str, tokens: tuple | None = None
) -> Sample | None:
    """The timing of an ok result.json; None for any other (diverged cells stop early, failed
    ones never finish) or one that lacks a field. `tokens`: (epoch, evaluation) tokens for a
    result that does not record its own (from its tokenized cache)."""
    if result.get("status") != "ok":
        return None
    try:
        seconds = float(result["wall_seconds"])
        instances = int(result["train_instances"])
        epochs = trained_epochs(result, instances)
        max_length = int(result["options"]["max_length"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    if not (seconds > 0 and instances > 0 and epochs > 0 and max_length > 0):
        return None
    device = str(result.get("device") or "unknown")
    seconds *= alone(result)
    tokens = recorded_tokens(result) or tokens
    scale = sizing.token_flops(result["options"]) / 6.0
    if tokens is None:
        units = work(epochs, instances, max_length, scale)
        return Sample(job, model, task, size, device, units, seconds)
    train, evaluated = tokens
    evaluations = len(result.get("epochs") or []) or epochs
    units = token_work(epochs, train, evaluations, evaluated, scale)
    return Sample(job, model, task, size, device, units, seconds, train / instances / max_length)


def alone(result: dict) -> float:
    """The share of a cell's wall time it would have taken alone on its GPU: 1 for one that
    trained alone (or before results recorded it), gain(m) / m for m cells at once."""
    try:
        sharing = float(result["engine"]["cells_sharing"])
    except (KeyError, TypeError, ValueError):
        return 1.0
    return gain(sharing) / sharing if sharing > 1 else 1.0


def recorded_tokens(result: dict) -> tuple[int, int] | None:
    """(tokens of a training epoch, of an evaluation) as result.json records them, else None."""
    tokens = result.get("tokens")
    try:
        train, evaluated = int(tokens["train"]), int(tokens["eval"])
    except (KeyError, TypeError, ValueError):
        return None
    return (train, evaluated) if train > 0 and evaluated >= 0 else None


def fit_line(xs: list[float], ys: list[float], prior: tuple[float, float]) -> tuple[float, float]:
    """(a, b) ≥ 0 minimising Σ (a + b·x − y)². With a single distinct x the split between a
    and b is unknowable: the prior's (a0, b0), scaled to the mean."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx <= 1e-9 * mx * mx:
        scale = my / (prior[0] + prior[1] * mx)
        return prior[0] * scale, prior[1] * scale
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    a = my - b * mx
    if a >= 0 and b >= 0:
        return a, b
    # the optimum lies on an edge: a = 0 (through the origin) or b = 0 (a constant)
    pairs = list(zip(xs, ys, strict=True))
    through = (0.0, sum(x * y for x, y in pairs) / sum(x * x for x, _ in pairs))
    return min(
        [through, (my, 0.0)], key=lambda c: sum((c[0] + c[1] * x - y) ** 2 for x, y in pairs)
    )


@dataclass(frozen=True)
class Rate:
    a: float  # seconds per seed
    b: float  # seconds per unit of work
    device: str
    cells: int  # finished cells behind it; 0: the prior
    source: str = "fit"  # fit, `scaled from {size}` (another size's fit × the priors' ratio), prior


class Calibration:
    """Rates per model size and factors per task from `samples` (`overrides`: the config's
    `resources` table). The sizes' lines and the tasks' factors are fitted together, in turn
    until they settle (alternating least squares: a task's factor is relative to the lines of
    the sizes it ran on, a line counts each cell's work × its task's factor); the factors are
    scaled to a geometric mean of 1, so a task without its own is a typical one."""

    def __init__(
        self,
        samples: list[Sample],
        overrides: dict | None = None,
        min_cells: int = MIN_CELLS,
        params: dict[str, int] | None = None,
        flops: float = sizing.FLOPS,
    ):
        """`flops`: the prior's rate (the configured GPU type's, blurbflow.plan.gpus)."""
        self.overrides, self.samples, self.flops = overrides, len(samples), flops
        self.params = params or {}  # size → parameter count (blurbflow.plan.params)
        groups: dict[tuple[str, str], list[Sample]] = defaultdict(list)
        for sample in samples:
            groups[sample.size, sample.device].append(sample)
        counts = Counter((s.device, s.task) for s in samples)
        tasks = {key: 1.0 for key, n in counts.items() if n >= min_cells}
        for _ in range(ITERATIONS):
            self.fits = {key: self._fit(key, group, tasks) for key, group in groups.items()}
            found = self._scales(samples, lambda s: (s.device, s.task), set(tasks), tasks={})
            for device in {key[0] for key in found}:  # geometric mean 1 per device, by cells
                mine = [key for key in found if key[0] == device]
                weight = sum(counts[key] for key in mine)
                mean = math.exp(sum(counts[k] * math.log(found[k]) for k in mine) / weight)
                found.update((key, found[key] / mean) for key in mine)
            settled = all(abs(found[key] - tasks[key]) < 1e-6 for key in found)
            tasks = found
            if settled:
                break
        self.fits = {key: self._fit(key, group, tasks) for key, group in groups.items()}
        pairs = Counter((s.device, s.model, s.task) for s in samples)
        enough = {key for key, n in pairs.items() if n >= min_cells}
        models = self._scales(samples, lambda s: (s.device, s.model, s.task), enough, tasks={})
        self.factors = {key: (f, counts[key]) for key, f in tasks.items()}
        self.factors.update((key, (f, pairs[key])) for key, f in models.items())
        devices: dict[str, Counter] = defaultdict(Counter)
        for (size, device), group in groups.items():
            devices[size][device] = len(group)
        # the plan's device for a size: that of most of its finished cells
        self.device = {size: count.most_common(1)[0][0] for size, count in devices.items()}

    def prior(self, size: str) -> tuple[float, float]:
        """(seconds per seed, seconds per unit of work) of a model size before any cell: its
        parameter count at the published rate (blurbflow.plan.params), or for a size class the
        config's `resources` lists, that table's figures."""
        if size in (self.overrides or {}):
            return SEED_OVERHEAD_MINUTES * 60.0, size_row(size, self.overrides)[2] * 60.0
        count = self.params.get(size) or sizing.SIZE_PARAMS.get(size, sizing.REFERENCE_PARAMS)
        return sizing.prior(count, TOKENS_PER_UNIT, self.flops)

    def _fit(self, key: tuple[str, str], group: list[Sample], tasks: dict) -> Rate:
        xs = [s.work * tasks.get((s.device, s.task), 1.0) for s in group]
        a, b = fit_line(xs, [s.seconds for s in group], self.prior(key[0]))
        return Rate(a, b, key[1], len(group))

    def _scales(self, samples, key_of, keys: set, tasks: dict) -> dict[tuple, float]:
        """Per key, the least-squares factor on the work term of its cells' time beyond a."""
        sums: dict[tuple, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for s in samples:
            key = key_of(s)
            if key in keys:
                fit = self.fits[s.size, s.device]
                x = fit.b * s.work * tasks.get((s.device, s.task), 1.0)
                sums[key][0] += (s.seconds - fit.a) * x
                sums[key][1] += x * x
        low, high = FACTOR_RANGE
        return {key: min(high, max(low, sxy / sxx)) for key, (sxy, sxx) in sums.items() if sxx > 0}

    def rate(self, size: str) -> Rate:
        """The size's own fit on its usual device; else the best-calibrated size's fit on the
        most used device, scaled by the table's ratio of the two sizes; else the table."""
        if size in self.device:
            return self.fits[size, self.device[size]]
        if self.fits:
            used: Counter = Counter()
            for (_, device), fit in self.fits.items():
                used[device] += fit.cells
            device = used.most_common(1)[0][0]
            other, fit = max(
                ((s, f) for (s, d), f in self.fits.items() if d == device), key=lambda x: x[1].cells
            )
            ratio = self.prior(size)[1] / self.prior(other)[1]
            return Rate(fit.a, fit.b * ratio, device, fit.cells, f"scaled from {other}")
        return Rate(*self.prior(size), TABLE_DEVICE, 0, "prior")

    def seed_seconds(
        self, model: str, task: str, size: str, units: float
    ) -> tuple[float, Rate, tuple]:
        """(seconds of one seed, its rate, (factor, cells, level) or ())."""
        rate = self.rate(size)
        found: tuple = ()
        if rate.cells:
            for level, key in (
                ("model", (rate.device, model, task)),
                ("task", (rate.device, task)),
            ):
                if key in self.factors:
                    found = (*self.factors[key], level)
                    break
        factor = found[0] if found else 1.0
        return rate.a + factor * rate.b * units, rate, found
