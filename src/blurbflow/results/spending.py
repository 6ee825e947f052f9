"""Group-sequential boundaries from an alpha-spending function (Lan & DeMets 1983), for the
adaptive seed rule (blurbflow.results.sequential; docs/seeds.md).

A two-sided test looked at K times, at information fractions t_1 < … < t_K = 1, rejects at look
k when |Z_k| ≥ c_k. Lan and DeMets choose c_k so that the probability under H0 of a first
crossing at look k is α(t_k) − α(t_{k−1}), with α(·) a spending function; the overall type I
error is then α(1) = α however many looks are taken and wherever they fall. The crossing
probabilities use the canonical joint distribution of the Z_k (independent increments of a
Brownian motion in information time), integrated numerically over the continuation region
look by look (Armitage, McPherson & Rowe 1969; Jennison & Turnbull 2000, chapter 19).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

SPENDING = ("obrien-fleming", "pocock", "hwang-shih-decani")
HSD_GAMMA = -10.0  # Hwang-Shih-DeCani's gamma: below O'Brien-Fleming's spending early (≈ -4)
GRID = 1601  # points over each look's continuation region: boundaries to ~1e-5


def spent(t: float, alpha: float, kind: str = "obrien-fleming") -> float:
    """α(t): the type I error spent by information fraction t, both sides together. O'Brien–
    Fleming type: each side spends 2 − 2Φ(z_{1−α/4}/√t) of its α/2 (Lan & DeMets 1983, as
    their programs and gsDesign's sfLDOF do for a symmetric two-sided test); Pocock type:
    α·ln(1 + (e − 1)t); Hwang, Shih & DeCani (1990): α(1 − e^{−γt})/(1 − e^{−γ}), γ = −10."""
    from scipy.stats import norm  # here: scipy.stats is slow to import (see results.stats)

    if kind not in SPENDING:
        raise ValueError(f"spending {kind!r}: one of {', '.join(SPENDING)}")
    if t <= 0:
        return 0.0
    t = min(t, 1.0)
    if kind == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    if kind == "hwang-shih-decani":
        return alpha * math.expm1(-HSD_GAMMA * t) / math.expm1(-HSD_GAMMA)
    return float(4 * norm.sf(norm.isf(alpha / 4) / math.sqrt(t)))


def boundaries(
    fractions, alpha: float, kind: str = "obrien-fleming", until: float = 1.0
) -> np.ndarray:
    """Two-sided critical values c_1..c_k for looks at the given information fractions
    (increasing, in (0, 1]; a final look is at 1, where all of α is spent). Spending stops at
    fraction `until` before the final look: α(min(t, until)) for t < 1 — still a spending
    function, so α holds — and looks past it cannot reject (c = ∞): a look just before the
    last one would spend α that the final look, nearly the same statistic, then lacks."""
    values = tuple(float(t) for t in fractions)
    if not values or any(b <= a for a, b in zip(values, values[1:], strict=False)):
        raise ValueError(f"information fractions must increase: {values}")
    if values[0] <= 0 or values[-1] > 1:
        raise ValueError(f"information fractions must lie in (0, 1]: {values}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha {alpha}: must lie in (0, 1)")
    return np.array(_boundaries(values, float(alpha), kind, float(until)))


@lru_cache(maxsize=256)
def _boundaries(
    fractions: tuple[float, ...], alpha: float, kind: str, until: float
) -> tuple[float, ...]:
    from scipy.optimize import brentq
    from scipy.stats import norm

    last = len(fractions) - 1
    capped = [t if t >= 1 else min(t, until) for t in fractions]
    increments = np.diff([0.0, *(spent(t, alpha, kind) for t in capped)])
    critical: list[float] = []
    # S_k = Z_k·√t_k, the score in information time; `density` is the sub-density of the paths
    # that have not crossed yet, on the grid `points` of the previous continuation region.
    points = density = weights = None
    previous_t = 0.0
    for k, t in enumerate(fractions):
        gap = t - previous_t
        if k == 0:

            def crossing(c, t=t):
                return 2 * norm.sf(c)

        else:

            def crossing(c, t=t, gap=gap, points=points, mass=density * weights):
                edge = c * math.sqrt(t)
                beyond = norm.sf((edge - points) / math.sqrt(gap))
                beyond += norm.cdf((-edge - points) / math.sqrt(gap))
                return float(mass @ beyond)

        if increments[k] <= 0:
            c = math.inf  # nothing to spend at this look: it cannot reject
        else:
            c = brentq(lambda c, f=crossing, a=increments[k]: f(c) - a, 1e-6, 40.0, xtol=1e-10)
        critical.append(c)
        if k == last:
            break
        edge = min(c, 9.0) * math.sqrt(t)  # beyond 9 sd: no mass worth a grid point
        new_points = np.linspace(-edge, edge, GRID)
        new_weights = np.full(GRID, new_points[1] - new_points[0])
        new_weights[[0, -1]] /= 2  # trapezoid rule
        if k == 0:
            density = norm.pdf(new_points / math.sqrt(t)) / math.sqrt(t)
        else:
            kernel = norm.pdf((new_points[:, None] - points[None, :]) / math.sqrt(gap))
            density = kernel @ (density * weights) / math.sqrt(gap)
        points, weights, previous_t = new_points, new_weights, t
    return tuple(critical)
