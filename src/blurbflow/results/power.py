"""Power and equivalence of one two-sample comparison over seeds (docs/results.md "Power").

Both samples are per-seed test scores of two table entries: independent, with unequal spread
(see results/stats.py), so everything here is Welch's: the difference of means, its standard
error sqrt(s1²/n1 + s2²/n2) and the Welch–Satterthwaite degrees of freedom.

- The interval: the difference ± t(0.975, df) × se (95%).
- Equivalence within ±delta: two one-sided Welch t-tests (TOST) of H0 difference ≤ −delta
  and H0 difference ≥ +delta; equivalent when both reject at 5% (the larger p below 0.05,
  which is the same as the 90% interval lying inside ±delta).
- The minimal detectable difference (MDE): the true difference the two-sided 5% Welch test
  would detect with 80% power, given the seeds run and their observed spread: the power is the
  noncentral t's mass beyond ±t(0.975, df) with noncentrality difference / se
  (scipy.special.nctdtr), solved for the difference (exact for Student's test with equal
  spreads and sizes; for Welch's the usual approximation, with Welch's df). The normal approximation
  (z(0.975) + z(0.8)) × se ≈ 2.80 × se is its large-sample limit (`mde_normal`).
- Seeds needed: the fewest seeds per side (both sides alike, each with its observed spread)
  whose t-based power for a difference of delta reaches 80%, found by counting n up from the
  normal approximation's answer (the t-test's power is below the z-test's, never above).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

ALPHA = 0.05  # two-sided level of the difference test; each one-sided TOST test at ALPHA too
POWER = 0.8
MAX_SEEDS = 100_000  # beyond this "seeds needed" is left empty
LABELS = ("different", "equivalent", "undecided")


# scipy.special's distribution functions, not scipy.stats' objects: ~4 µs a call instead of
# ~100 µs, and a study can make thousands of comparisons (each MDE takes a dozen calls).
# Imported in the functions: scipy is slow to import (see results/stats.py welch_p).
def _t_sf(x: float, df: float) -> float:
    from scipy.special import stdtr

    return float(stdtr(df, -x))


def _t_ppf(p: float, df: float) -> float:
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def welch_se_df(var1: float, n1: int, var2: float, n2: int) -> tuple[float, float]:
    """Standard error of the difference of means and Welch–Satterthwaite degrees of freedom;
    df is NaN when both variances are 0."""
    a, b = var1 / n1, var2 / n2
    se = math.sqrt(a + b)
    denominator = a * a / (n1 - 1) + b * b / (n2 - 1)
    return se, (a + b) ** 2 / denominator if denominator > 0 else math.nan


def welch_power(difference: float, se: float, df: float, alpha: float = ALPHA) -> float:
    """Power of the two-sided level-`alpha` Welch t-test when the true difference is
    `difference`: P(|T| > t(1 − alpha/2, df)), T noncentral t with noncentrality
    difference / se."""
    from scipy.special import nctdtr

    critical = _t_ppf(1 - alpha / 2, df)
    noncentrality = abs(difference) / se
    near = 1.0 - float(nctdtr(df, noncentrality, critical))
    if math.isnan(near):  # nctdtr gives NaN far out (power ~1, noncentrality > 35); nct does not
        from scipy.stats import nct

        near = float(nct.sf(critical, df, noncentrality))
    far = float(nctdtr(df, noncentrality, -critical))
    # NaN for this far tail at a large noncentrality with few df, where it is below 1e-15
    # (checked for df 1–200, noncentrality 0–200)
    return near + (0.0 if math.isnan(far) else far)


def minimal_detectable(se: float, df: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The difference the two-sided Welch t-test detects with `power` (noncentral t with
    Welch's df, see the module doc); NaN when se or df is not a positive finite number."""
    from scipy.optimize import brentq

    if not (se > 0 and df > 0 and math.isfinite(se) and math.isfinite(df)):
        return math.nan
    high = mde_normal(se, alpha, power)
    while welch_power(high, se, df, alpha) < power:  # few df: far beyond the normal answer
        high *= 2
    return float(brentq(lambda d: welch_power(d, se, df, alpha) - power, 0.0, high, xtol=1e-9))


def mde_normal(se: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The normal approximation of the MDE: (z(1 − alpha/2) + z(power)) × se."""
    from scipy.stats import norm

    return float((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * se)


def seeds_needed(
    std1: float, std2: float, delta: float, alpha: float = ALPHA, power: float = POWER
) -> int | None:
    """Fewest seeds per side (at least 2) for which the Welch t-test detects a difference of
    `delta` with `power`, both sides with the given spreads; None when the spreads are unknown
    or 0, or more than MAX_SEEDS would be needed."""
    from scipy.stats import norm

    variance = std1 * std1 + std2 * std2
    if not (variance > 0 and math.isfinite(variance) and delta > 0):
        return None
    z = norm.ppf(1 - alpha / 2) + norm.ppf(power)
    n = max(2, math.ceil(z * z * variance / (delta * delta)))  # the z-test's answer
    while n <= MAX_SEEDS:
        se, df = welch_se_df(std1 * std1, n, std2 * std2, n)
        if welch_power(delta, se, df, alpha) >= power:
            return n
        n += 1
    return None


def tost_p(difference: float, se: float, df: float, delta: float) -> float:
    """p-value of equivalence within ±delta: the larger of the two one-sided Welch tests'."""
    lower = _t_sf((difference + delta) / se, df)  # H0: difference <= -delta
    upper = _t_sf((delta - difference) / se, df)  # H0: difference >= +delta
    return max(lower, upper)


def label(p_welch: float, p_tost: float, alpha: float = ALPHA) -> str:
    """`equivalent` when TOST shows the difference within ±delta (even when it also differs
    from 0: then it is a difference smaller than the one of interest), else `different` when
    Welch's test rejects no difference, else `undecided`."""
    if p_tost < alpha:
        return "equivalent"
    if p_welch < alpha:
        return "different"
    return "undecided"


def compare(sample: Sequence[float], reference: Sequence[float], delta: float) -> dict:
    """sample − reference: the difference of means, its 95% Welch interval (`low`, `high`),
    `df`, Welch's two-sided p, TOST's p for ±delta, the MDE at 80% power, the seeds per side
    needed for delta, and the label. Fewer than two values on a side, or no spread on either,
    gives no test: NaN numbers and `undecided`."""
    n1, n2 = len(sample), len(reference)
    mean1 = float(np.mean(sample)) if n1 else math.nan
    mean2 = float(np.mean(reference)) if n2 else math.nan
    std1 = float(np.std(sample, ddof=1)) if n1 > 1 else math.nan
    std2 = float(np.std(reference, ddof=1)) if n2 > 1 else math.nan
    result = {
        "difference": mean1 - mean2,
        "low": math.nan,
        "high": math.nan,
        "df": math.nan,
        "p_welch": math.nan,
        "p_tost": math.nan,
        "mde": math.nan,
        "seeds_needed": seeds_needed(std1, std2, delta) if n1 > 1 and n2 > 1 else None,
        "label": "undecided",
    }
    if n1 < 2 or n2 < 2:
        return result
    se, df = welch_se_df(std1 * std1, n1, std2 * std2, n2)
    if not (se > 0 and math.isfinite(df)):
        return result
    margin = _t_ppf(1 - ALPHA / 2, df) * se
    difference = result["difference"]
    p_welch = 2 * _t_sf(abs(difference) / se, df)
    p_tost = tost_p(difference, se, df, delta)
    result.update(
        low=difference - margin,
        high=difference + margin,
        df=df,
        p_welch=p_welch,
        p_tost=p_tost,
        mde=minimal_detectable(se, df),
        label=label(p_welch, p_tost),
    )
    return result
