"""Adaptive seeds (issue 22; docs/seeds.md): after each round of seeds, decide per comparison of
two cells whether their mean test scores differ, are equivalent within ±delta, or need more
seeds, with error rates that hold over all the looks a study takes.

The procedure is a group-sequential Welch test. Look k (per-arm seeds n_k = start, start + step,
…, max) uses the two-sided Lan–DeMets boundary c_k of a Hwang–Shih–DeCani spending function
(γ = −10; blurbflow.results.spending) at information fraction n_k/max. It spends almost nothing
before the last look, so the last look is nearly the fixed test. The boundary applies to the Welch
t-statistic through its nominal level: different when the Welch p-value is at most 2(1 − Φ(c_k))
(Jennison & Turnbull 2000, section 3.8). The same boundaries give repeated confidence intervals
(Jennison & Turnbull, chapter 9), which cover the true difference at every look at once:
equivalent when the (1 − 2α) one lies inside (−delta, delta), the sequential two one-sided tests.
A look that can still reach neither conclusion by `max` seeds — the predictive probability of
each at the final look (Student t: the variances are estimates) below `futility`, or
`futility_first` at the first look — stops undecided: a stop without a claim, so it cannot raise
the error rates above α. A failed seed (dev at or below chance, or diverged: give `chance`) is a
score like any other: its spread is part of what the recipe does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum

import numpy as np

from blurbflow.util.errors import ConfigError
from blurbflow.results.spending import SPENDING, boundaries

# The first look's futility threshold over the later looks' when not given: 0.27 at the default
# 0.12, chosen with benchmarks/adaptive_seeds.py (docs/seeds.md, The procedure: Futility).
FIRST_LOOK_FUTILITY = 2.25


class Outcome(StrEnum):
    CONTINUE = "continue"  # run `step` more seeds of both cells
    DIFFERENT = "different"
    EQUIVALENT = "equivalent"  # within ±delta
    UNDECIDED = "undecided"  # at max seeds, or neither conclusion reachable by then


@dataclass(frozen=True)
class SeedPlan:
    """`seeds: {adaptive: {start, step, max, delta}}` of a study (alpha, futility,
    futility_first, spending, spend_until optional): every cell runs `start` seeds, then `step`
    more per round while undecided, up to `max`; delta is the equivalence margin in metric
    points. futility_first (default 2.25 × futility) is the first look's futility threshold:
    there the predictive probability of "different" cannot fall much below 0.25, so the later
    looks' threshold would never stop; futility 0 (futility_first unset) turns it off."""

    start: int
    step: int
    max: int
    delta: float
    alpha: float = 0.05
    futility: float = 0.12
    spending: str = "hwang-shih-decani"
    spend_until: float = 0.8
    futility_first: float | None = None

    def __post_init__(self):
        where = "seeds.adaptive"
        for key in ("start", "step", "max"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{where}.{key}: {value!r} is not a whole number")
        if self.start < 2:
            raise ConfigError(f"{where}.start: {self.start}; a variance needs at least 2 seeds")
        if self.step < 1:
            raise ConfigError(f"{where}.step: {self.step}; at least 1 seed a round")
        if self.start > self.max:
            raise ConfigError(f"{where}: start {self.start} is above max {self.max}")
        if not (isinstance(self.delta, int | float) and math.isfinite(self.delta)):
            raise ConfigError(f"{where}.delta: {self.delta!r} is not a finite number")
        if self.delta <= 0:
            raise ConfigError(f"{where}.delta: {self.delta}; the equivalence margin must be > 0")
        if not 0 < self.alpha < 0.5:
            raise ConfigError(f"{where}.alpha: {self.alpha}; must lie in (0, 0.5)")
        if not 0 <= self.futility < 1:
            raise ConfigError(f"{where}.futility: {self.futility}; must lie in [0, 1)")
        first = self.futility_first
        if first is not None and not (isinstance(first, int | float) and 0 <= first < 1):
            raise ConfigError(f"{where}.futility_first: {first!r}; must lie in [0, 1)")
        if not 0 < self.spend_until <= 1:
            raise ConfigError(f"{where}.spend_until: {self.spend_until}; must lie in (0, 1]")
        if self.spending not in SPENDING:
            raise ConfigError(f"{where}.spending: {self.spending!r}; one of {SPENDING}")

    @classmethod
    def from_config(cls, spec: dict) -> SeedPlan:
        known = {"start", "step", "max", "delta", "alpha", "futility", "spending", "spend_until"}
        known.add("futility_first")
        unknown = sorted(set(spec) - known)
        if unknown:
            raise ConfigError(f"seeds.adaptive.{unknown[0]}: unknown key (known: {sorted(known)})")
        missing = sorted({"start", "step", "max", "delta"} - set(spec))
        if missing:
            raise ConfigError(f"seeds.adaptive: {', '.join(missing)} missing")
        return cls(**spec)

    @property
    def seeds(self) -> tuple[int, ...]:
        """Per-cell seed counts at each look: start, start + step, …, capped at max."""
        counts = list(range(self.start, self.max, self.step))
        return (*counts, self.max)

    @property
    def looks(self) -> int:
        return len(self.seeds)

    @property
    def fractions(self) -> tuple[float, ...]:
        return tuple(n / self.max for n in self.seeds)

    def futility_at(self, look: int) -> float:
        """The futility threshold of look `look` (1-based)."""
        if look > 1:
            return self.futility
        first = self.futility_first
        return min(FIRST_LOOK_FUTILITY * self.futility, 0.99) if first is None else first


@dataclass(frozen=True)
class Decision:
    """One comparison at one look: mean(a) − mean(b), its (1 − α) repeated confidence interval
    (different iff it excludes 0), the (1 − 2α) one (equivalent iff inside ±delta), the Welch
    p-value against this look's nominal level, and before max the predictive probabilities of
    reaching each conclusion at max seeds."""

    outcome: Outcome
    look: int
    n_a: int
    n_b: int
    difference: float
    interval: tuple[float, float]
    equivalence_interval: tuple[float, float]
    p_value: float
    nominal_alpha: float
    p_different_at_max: float = math.nan
    p_equivalent_at_max: float = math.nan

    @property
    def final(self) -> bool:
        return self.outcome is not Outcome.CONTINUE

    def to_dict(self) -> dict:
        return {**asdict(self), "outcome": str(self.outcome)}


def _scores(values: Sequence[float], chance: float | None, side: str) -> np.ndarray:
    array = np.asarray(values, dtype="float64")
    missing = ~np.isfinite(array)
    if missing.any():
        if chance is None:
            raise ValueError(
                f"{side}: {int(missing.sum())} seed(s) without a score; pass the "
                "task's chance level: a failed seed counts, at chance"
            )
        array = np.where(missing, chance, array)
    if len(array) < 2:
        raise ValueError(f"{side}: {len(array)} score(s); a look needs at least 2 per cell")
    return array


def _t_quantile(level: float, df: float) -> float:
    from scipy.special import ndtri, stdtrit  # ufuncs: fast, unlike scipy.stats' objects

    return float(ndtri(1 - level / 2) if math.isinf(df) else stdtrit(df, 1 - level / 2))


def _welch_df(va: float, na: int, vb: float, nb: int) -> float:
    wa, wb = va / na, vb / nb
    denominator = wa**2 / (na - 1) + wb**2 / (nb - 1)
    return (wa + wb) ** 2 / denominator if denominator > 0 else math.inf


def decide(
    a_scores: Sequence[float],
    b_scores: Sequence[float],
    look: int,
    plan: SeedPlan,
    chance: float | None = None,
) -> Decision:
    """The decision at `look` (1-based) on every seed so far of cells a and b (a seed without a
    score, NaN, counts at `chance`). Cells may hold more seeds than the round's count (a
    baseline shared with other comparisons): the look's information fraction follows from the
    counts, the earlier looks' from the plan. A comparison's first final decision is its
    result: the caller stops looking at it (later rounds of a shared cell do not reopen it)."""
    from scipy.special import ndtr, stdtr

    a, b = _scores(a_scores, chance, "a"), _scores(b_scores, chance, "b")
    if not 1 <= look <= plan.looks:
        raise ValueError(f"look {look}: the plan {plan.seeds} has looks 1 to {plan.looks}")
    na, nb, big_n = len(a), len(b), plan.max
    now = min(1.0, 2 * na * nb / ((na + nb) * big_n))  # harmonic count over max
    earlier = plan.fractions[: look - 1]
    final = look == plan.looks or now >= 1.0
    if earlier and now <= earlier[-1] + 1e-9:
        raise ValueError(f"look {look}: {na} and {nb} seeds; the plan has {plan.seeds[look - 1]}")
    fractions = (*earlier, 1.0 if final else now)
    c = boundaries(fractions, plan.alpha, plan.spending, plan.spend_until)[-1]
    c_eq = boundaries(fractions, 2 * plan.alpha, plan.spending, plan.spend_until)[-1]
    level, level_eq = 2 * float(ndtr(-c)), 2 * float(ndtr(-c_eq))

    d = float(a.mean() - b.mean())
    va, vb = float(a.var(ddof=1)), float(b.var(ddof=1))
    se = math.sqrt(va / na + vb / nb)
    df = _welch_df(va, na, vb, nb)
    half, half_eq = _t_quantile(level, df) * se, _t_quantile(level_eq, df) * se
    if se > 0:
        p_value = (
            float(2 * stdtr(df, -abs(d) / se)) if math.isfinite(df) else 2 * ndtr(-abs(d) / se)
        )
    else:
        p_value = 1.0 if d == 0 else 0.0
    common = {
        "look": look,
        "n_a": na,
        "n_b": nb,
        "difference": d,
        "interval": (d - half, d + half),
        "equivalence_interval": (d - half_eq, d + half_eq),
        "p_value": float(p_value),
        "nominal_alpha": level,
    }
    if abs(d) > half or (se == 0 and d != 0):
        return Decision(Outcome.DIFFERENT, **common)
    if abs(d) + half_eq < plan.delta:
        return Decision(Outcome.EQUIVALENT, **common)
    if final:
        return Decision(Outcome.UNDECIDED, **common)
    p_diff, p_eq = _predictive(d, va, na, vb, nb, df, plan, fractions)
    threshold = plan.futility_at(look)
    stop = p_diff < threshold and p_eq < threshold
    outcome = Outcome.UNDECIDED if stop else Outcome.CONTINUE
    return Decision(outcome, **common, p_different_at_max=p_diff, p_equivalent_at_max=p_eq)


def _predictive(d, va, na, vb, nb, df, plan: SeedPlan, fractions) -> tuple[float, float]:
    """P(different at max), P(equivalent at max): the final difference given the seeds so far
    and a flat prior on the true one is centred on d with scale √(Σ v(N − n)/(N n))
    (Spiegelhalter, Freedman & Blackburn 1986's predictive power), Student t with the look's
    Welch degrees of freedom: the variances are estimates from few seeds (with a known variance
    it would be normal; Gelman et al. 2013, section 3.2, for one sample)."""
    from scipy.special import ndtr, stdtr

    def cdf(x: float) -> float:  # the look's t; normal when df is infinite (no spread)
        return float(ndtr(x)) if math.isinf(df) else float(stdtr(df, x))

    big_n = plan.max
    spread = math.sqrt(va * (big_n - na) / (big_n * na) + vb * (big_n - nb) / (big_n * nb))
    se_final = math.sqrt((va + vb) / big_n)
    df_final = _welch_df(va, big_n, vb, big_n)
    later = tuple(t for t in plan.fractions if t > fractions[-1])
    schedule = (*fractions, *later[:-1], 1.0) if later else fractions
    c = boundaries(schedule, plan.alpha, plan.spending, plan.spend_until)[-1]
    c_eq = boundaries(schedule, 2 * plan.alpha, plan.spending, plan.spend_until)[-1]
    h = _t_quantile(2 * float(ndtr(-c)), df_final) * se_final
    e = plan.delta - _t_quantile(2 * float(ndtr(-c_eq)), df_final) * se_final
    if spread == 0:
        return float(abs(d) > h), float(abs(d) < e)
    p_diff = cdf((d - h) / spread) + cdf((-h - d) / spread)
    p_eq = cdf((e - d) / spread) - cdf((-e - d) / spread) if e > 0 else 0.0
    return p_diff, p_eq


def replay(
    a_scores: Sequence[float],
    b_scores: Sequence[float],
    plan: SeedPlan,
    chance: float | None = None,
) -> Decision:
    """The adaptive rounds on seeds already known (simulations, tests): look k sees the first
    plan.seeds[k] scores of each cell; the first final decision. Needs max scores a cell."""
    for look, n in enumerate(plan.seeds, start=1):
        decision = decide(a_scores[:n], b_scores[:n], look, plan, chance)
        if decision.final:
            return decision
    raise AssertionError("the last look is always final")  # pragma: no cover


def fixed_decision(
    a_scores: Sequence[float],
    b_scores: Sequence[float],
    plan: SeedPlan,
    chance: float | None = None,
) -> Decision:
    """The fixed design's conclusion on all seeds, one look: Welch's test at α, the (1 − 2α)
    interval against ±delta (two one-sided tests)."""
    n = len(a_scores)
    single = SeedPlan(n, 1, n, plan.delta, plan.alpha, 0.0, plan.spending, plan.spend_until)
    return decide(a_scores, b_scores, 1, single, chance)
