"""The reproduction verdict of one table entry (docs/results.md "Reproduction"): is our number
the paper's, give or take the study's `reproduction_margin`?

The published value p, printed to a unit of 10^-decimals, stands for every value within
u = half a unit of it; m is the entry's margin; [low, high] our interval
(results/reproduction.py):

- `reproduced`: every value of our interval is within m of every value p stands for:
  p + u − m ≤ low and high ≤ p − u + m (equivalence, as the Power section's TOST for two
  recipes; here against a fixed number, so our interval alone decides);
- `differs`: our interval excludes p by more than m: high < p − u − m or low > p + u + m;
- `inconclusive`: neither (too few seeds, or too much spread), or fewer than 2 ok seeds (no
  interval).

Seeds to decide an inconclusive entry of a mean study: the fewest seeds whose t-interval,
with the observed mean and spread kept, would lie inside (reproduced) or outside (differs) the
band: half-width t(0.975, df) · S / √n below the gap g = (m − u) − |d| or |d| − (m + u),
d = ours − p (none when |d| is within u of m: no number of seeds decides it there). For a task,
S = s (the seeds' sample standard deviation) and df = n − 1. A BLURB score is
Σ w_t · mean_t over its tasks (w_t = 1 / (types × tasks of t's type)), the tasks' seeds
independent: its interval is the score ± t(0.975, df) · se, se² = Σ w_t² s_t² / n_t, df
Welch–Satterthwaite's; the seeds to decide are per task, S² = Σ w_t² s_t². A median study's
BLURB score has no interval (order-statistic intervals do not add up): not comparable.

A printed BLURB score that the paper's own printed task values do not give (their BLURB score
differs from it by more than the rounding of both, 2u) is flagged: one of them is a misprint
(Tinn et al. Table 9's PubMedBERT-BASE Optimal column prints 82.75 where its tasks give 82.00)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from blurbflow.metrics.blurb import blurb_score
from blurbflow.tasks.registry import get_task

LEVEL = 0.95
DEFAULT_MARGIN = 1.0  # test points (x100); a study's `reproduction_margin` replaces it
MAX_SEEDS = 100_000  # beyond this "seeds to decide" is left empty
VERDICTS = ("reproduced", "differs", "inconclusive")


def _t(df: float, level: float = LEVEL) -> float:
    from scipy.special import stdtrit  # here: scipy is slow to import (see results/stats.py)

    return float(stdtrit(df, (1 + level) / 2))


def study_margin(study: dict, task: str) -> float:
    """The entry's margin: `reproduction_margin` (a number, or {default, <task>: …} where
    `blurb` names the BLURB score), default 1.0 test points."""
    margin = study.get("reproduction_margin", DEFAULT_MARGIN)
    if isinstance(margin, Mapping):
        margin = margin.get(task, margin.get("default", DEFAULT_MARGIN))
    margin = float(margin)
    if not margin > 0:
        raise ValueError(f"reproduction_margin {margin!r} must be a number above 0")
    return margin


def blurb_weights(tasks: Sequence[str]) -> dict[str, float]:
    """Each task's weight in the BLURB score: 1 / (task types × tasks of its type)."""
    by_type: dict[str, list[str]] = {}
    for task in tasks:
        by_type.setdefault(get_task(task).type, []).append(task)
    return {t: 1 / (len(by_type) * len(group)) for group in by_type.values() for t in group}


def _parts(scores: Mapping[str, Sequence[float]]) -> list[tuple[float, int]]:
    """(w² · s², n) per task of an entry's seeds (one task: w = 1)."""
    weights = blurb_weights(list(scores))
    return [(weights[t] ** 2 * float(np.var(v, ddof=1)), len(v)) for t, v in scores.items()]


def blurb_interval(
    scores: Mapping[str, Sequence[float]], score: float
) -> tuple[float, float, float] | None:
    """(low, high, level) of a mean BLURB score from its tasks' seeds (module doc); None when a
    task has fewer than 2 ok seeds."""
    if not scores or any(len(v) < 2 for v in scores.values()):
        return None
    parts = [(a / n, n) for a, n in _parts(scores)]
    variance = sum(a for a, _ in parts)
    if variance == 0:
        return score, score, LEVEL
    df = variance**2 / sum(a * a / (n - 1) for a, n in parts)
    half = _t(df) * math.sqrt(variance)
    return score - half, score + half, LEVEL


def seeds_to_decide(
    scores: Mapping[str, Sequence[float]], difference: float, margin: float, unit: float
) -> int | None:
    """The fewest seeds (per task) whose interval, at the observed mean and spread, would
    decide the verdict (module doc); None when no number of seeds would, a task has fewer than
    2 seeds or no spread, or more than MAX_SEEDS are needed."""
    from scipy.stats import norm

    if not scores or any(len(v) < 2 for v in scores.values()):
        return None
    terms = [a for a, _ in _parts(scores)]
    s = math.sqrt(sum(terms))  # S of the module doc
    distance = abs(difference)
    gap = (margin - unit) - distance if distance < margin else distance - (margin + unit)
    if not (s > 0 and gap > 0):
        return None
    ratio = sum(terms) ** 2 / sum(a * a for a in terms)  # df = ratio · (n − 1)
    n = max(2, min(len(v) for v in scores.values()) + 1)
    n = max(n, math.ceil((norm.ppf((1 + LEVEL) / 2) * s / gap) ** 2))  # the z answer: fewer
    while n <= MAX_SEEDS:
        if _t(ratio * (n - 1)) * s / math.sqrt(n) < gap:
            return n
        n += 1
    return None


def verdict(
    published: float, low: float | None, high: float | None, margin: float, unit: float
) -> str:
    """`reproduced`, `differs` or `inconclusive` (module doc); no interval is inconclusive."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "inconclusive"
    if published + unit - margin <= low and high <= published - unit + margin:
        return "reproduced"
    if high < published - unit - margin or low > published + unit + margin:
        return "differs"
    return "inconclusive"


def contradiction(tasks: Mapping[str, float | None], printed: float, unit: float) -> str | None:
    """A note when the printed task values give another BLURB score than the printed one (module
    doc); None when they agree or a task's value is not printed."""
    if not tasks or any(v is None for v in tasks.values()):
        return None
    score = blurb_score(tasks)
    if abs(score - printed) <= 2 * unit + 1e-9:
        return None
    digits = max(1, round(-math.log10(2 * unit)))  # the printed decimals, at least one
    return f"contradicted: the paper's own task values give {score:.{digits}f}"
