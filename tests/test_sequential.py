"""Adaptive seeds (blurbflow.results.sequential, .spending): Lan–DeMets boundaries against
published values, the plan's checks, each decision of `decide`, and the type I error over all
looks by a quick simulation with a fixed seed."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import ttest_ind

from blurbflow.results.sequential import Outcome, SeedPlan, decide, fixed_decision, replay
from blurbflow.results.spending import boundaries, spent
from blurbflow.util.errors import ConfigError


def nominal_levels(critical) -> np.ndarray:
    """Each look's nominal two-sided significance level 2(1 − Φ(c_k)): what the look's own
    p-value is compared with (Jennison & Turnbull 2000, section 3.8, for t-statistics)."""
    from scipy.stats import norm

    return 2 * norm.sf(np.asarray(critical, dtype="float64"))


PLAN = SeedPlan(start=3, step=2, max=10, delta=1.0)


def test_obrien_fleming_type_boundaries_match_published_values():
    # Lan-DeMets O'Brien-Fleming-type, two-sided alpha 0.05, equally spaced looks: the values
    # of Reboussin et al.'s programs (ld98) and gsDesign's sfLDOF
    five = boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.05)
    assert five == pytest.approx([4.8769, 3.3569, 2.6803, 2.2898, 2.0310], abs=2e-4)
    assert boundaries([0.5, 1.0], 0.05) == pytest.approx([2.9626, 1.9686], abs=2e-4)


def test_pocock_type_boundaries_match_published_values():
    five = boundaries([0.2, 0.4, 0.6, 0.8, 1.0], 0.05, "pocock")
    assert five == pytest.approx([2.4380, 2.4268, 2.4101, 2.3966, 2.3859], abs=5e-4)


def test_one_look_is_the_fixed_test_and_spending_reaches_alpha():
    assert boundaries([1.0], 0.05)[0] == pytest.approx(1.959964, abs=1e-5)
    assert spent(1.0, 0.05) == pytest.approx(0.05)
    assert spent(1.0, 0.05, "pocock") == pytest.approx(0.05)
    assert spent(0.0, 0.05) == 0.0
    with pytest.raises(ValueError, match="increase"):
        boundaries([0.5, 0.5, 1.0], 0.05)


@pytest.mark.parametrize("kind", ["obrien-fleming", "hwang-shih-decani"])
def test_boundaries_keep_alpha_over_all_looks_by_simulation(kind):
    # Brownian motion in information time, 200,000 paths with a fixed seed
    fractions = np.array(PLAN.fractions)
    critical = boundaries(fractions, 0.05, kind, until=0.8)
    rng = np.random.default_rng(0)
    steps = rng.normal(size=(200_000, len(fractions))) * np.sqrt(np.diff([0, *fractions]))
    z = np.cumsum(steps, axis=1) / np.sqrt(fractions)
    crossed = (np.abs(z) >= critical).any(axis=1).mean()
    assert crossed == pytest.approx(0.05, abs=0.002)


def test_hwang_shih_decani_spends_almost_nothing_before_the_last_look():
    # gamma -10: alpha (1 - e^(10 t)) / (1 - e^10)
    assert spent(0.5, 0.05, "hwang-shih-decani") == pytest.approx(
        0.05 * math.expm1(5) / math.expm1(10)
    )
    assert spent(1.0, 0.05, "hwang-shih-decani") == pytest.approx(0.05)
    assert spent(0.3, 0.05, "hwang-shih-decani") < spent(0.3, 0.05, "obrien-fleming")
    levels = nominal_levels(boundaries(PLAN.fractions, 0.05, "hwang-shih-decani", until=0.8))
    assert levels[-1] == pytest.approx(0.0497, abs=2e-4)  # the fixed test's 0.05, nearly
    assert PLAN.spending == "hwang-shih-decani"


def test_spending_stops_at_until_and_the_final_look_gets_the_rest():
    capped = boundaries(PLAN.fractions, 0.05, until=0.8)
    plain = boundaries(PLAN.fractions, 0.05)
    assert capped[:3] == pytest.approx(plain[:3])
    assert nominal_levels(capped)[-1] > nominal_levels(plain)[-1]  # nearer the fixed 0.05
    assert math.isinf(boundaries([0.3, 0.85, 0.9, 1.0], 0.05, until=0.8)[2])


def test_plan_schedule_and_checks():
    assert PLAN.seeds == (3, 5, 7, 9, 10)
    assert PLAN.fractions == pytest.approx((0.3, 0.5, 0.7, 0.9, 1.0))
    assert SeedPlan(3, 3, 9, 1.0).seeds == (3, 6, 9)
    assert SeedPlan(10, 2, 10, 1.0).seeds == (10,)
    with pytest.raises(ConfigError, match="start 11 is above max 10"):
        SeedPlan(11, 2, 10, 1.0)
    with pytest.raises(ConfigError, match=r"seeds\.adaptive\.step: 0"):
        SeedPlan(3, 0, 10, 1.0)
    with pytest.raises(ConfigError, match=r"seeds\.adaptive\.delta: 0"):
        SeedPlan(3, 2, 10, 0)
    with pytest.raises(ConfigError, match="delta: -1"):
        SeedPlan(3, 2, 10, -1.0)
    with pytest.raises(ConfigError, match="whole number"):
        SeedPlan(3.5, 2, 10, 1.0)
    with pytest.raises(ConfigError, match="at least 2 seeds"):
        SeedPlan(1, 2, 10, 1.0)
    config = {"start": 3, "step": 2, "max": 10, "delta": 1.0}
    assert SeedPlan.from_config(config) == PLAN
    with pytest.raises(ConfigError, match=r"seeds\.adaptive\.stepp: unknown key"):
        SeedPlan.from_config({**config, "stepp": 1})
    with pytest.raises(ConfigError, match="delta missing"):
        SeedPlan.from_config({"start": 3, "step": 2, "max": 10})


def test_a_clear_difference_stops_early_with_its_sign():
    a = [90.1, 90.3, 89.9, 90.0, 90.2]
    b = [85.0, 85.4, 84.8, 85.1, 85.3]
    decision = decide(b, a, 2, PLAN)
    assert decision.outcome is Outcome.DIFFERENT and decision.final
    assert decision.difference == pytest.approx(-4.98)
    assert decision.interval[1] < 0
    assert decision.p_value <= decision.nominal_alpha < 0.05  # a look's level is below alpha


def test_equivalent_within_delta():
    rng = np.random.default_rng(1)
    a, b = 90 + rng.normal(0, 0.1, 10), 90 + rng.normal(0, 0.1, 10)
    decision = decide(a, b, 5, PLAN)
    assert decision.outcome is Outcome.EQUIVALENT
    low, high = decision.equivalence_interval
    assert -1.0 < low < high < 1.0
    assert decide([94.9, 94.9, 94.9], [94.9, 94.9, 94.9], 1, PLAN).outcome is Outcome.EQUIVALENT


def test_continue_then_undecided_at_max():
    a = [91.0, 93.0, 92.0]
    b = [90.5, 92.0, 91.0]
    decision = decide(a, b, 1, PLAN)
    assert decision.outcome is Outcome.CONTINUE and not decision.final
    assert 0 <= decision.p_different_at_max <= 1 and 0 <= decision.p_equivalent_at_max <= 1
    a = [91.0, 93.0, 92.0, 90.0, 94.0, 91.5, 92.5, 93.5, 90.5, 92.0]
    b = [90.5, 92.0, 91.0, 91.5, 90.0, 93.0, 92.0, 89.5, 91.0, 92.5]
    final = decide(a, b, 5, PLAN)
    assert final.outcome is Outcome.UNDECIDED and math.isnan(final.p_different_at_max)


def test_futility_stops_undecided_when_max_seeds_cannot_decide():
    # means 0.2 apart with a spread of 2 points: ten seeds could show neither
    a = [90.0, 93.0, 87.0, 91.0, 89.0]
    b = [91.0, 88.0, 92.0, 90.0, 90.0]
    decision = decide(a, b, 2, PLAN)
    assert decision.outcome is Outcome.UNDECIDED and decision.final
    assert decision.p_different_at_max < PLAN.futility
    assert decision.p_equivalent_at_max < PLAN.futility
    never = SeedPlan(3, 2, 10, 1.0, futility=0.0)
    assert decide(a, b, 2, never).outcome is Outcome.CONTINUE


def test_the_first_look_has_its_own_futility_threshold_and_zero_turns_futility_off():
    assert PLAN.futility == 0.12 and PLAN.futility_at(1) == pytest.approx(0.27)
    assert PLAN.futility_at(2) == 0.12
    assert SeedPlan(3, 2, 10, 1.0, futility=0.0).futility_at(1) == 0.0
    assert SeedPlan(3, 2, 10, 1.0, futility_first=0.05).futility_at(1) == 0.05
    with pytest.raises(ConfigError, match=r"seeds\.adaptive\.futility_first: 1"):
        SeedPlan.from_config({"start": 3, "step": 2, "max": 10, "delta": 1, "futility_first": 1})
    # three seeds a cell, means 0.1 apart with a spread of 2: ten could hardly show a difference
    a, b = [90.0, 92.0, 88.1], [88.0, 92.0, 90.0]
    first = decide(a, b, 1, PLAN)
    assert first.outcome is Outcome.UNDECIDED
    assert 0.12 < first.p_different_at_max < 0.27  # below the first look's threshold only
    assert decide(a, b, 1, SeedPlan(3, 2, 10, 1.0, futility_first=0.12)).outcome is Outcome.CONTINUE


def test_the_predictive_probability_is_students_t_with_the_looks_welch_df():
    from scipy.stats import t as student

    a, b = [91.0, 93.0, 92.0], [90.5, 92.0, 91.0]
    decision = decide(a, b, 1, PLAN)
    va, vb, n, big = np.var(a, ddof=1), np.var(b, ddof=1), 3, PLAN.max
    df = (va / n + vb / n) ** 2 / ((va / n) ** 2 / (n - 1) + (vb / n) ** 2 / (n - 1))
    scale = math.sqrt((va + vb) * (big - n) / (big * n))
    final = boundaries(PLAN.fractions, 0.05, PLAN.spending, PLAN.spend_until)[-1]
    df_final = (va + vb) ** 2 / ((va**2 + vb**2) / (big - 1))
    level = 2 * (1 - student.cdf(final, np.inf))
    h = student.ppf(1 - level / 2, df_final) * math.sqrt((va + vb) / big)
    d = decision.difference
    expected = student.cdf((d - h) / scale, df) + student.cdf((-h - d) / scale, df)
    assert decision.p_different_at_max == pytest.approx(expected, rel=1e-6)


def test_failed_seeds_count_at_chance():
    with pytest.raises(ValueError, match="without a score"):
        decide([80.0, math.nan, 81.0], [79.0, 80.0, 82.0], 1, PLAN)
    with_nan = decide([80.0, math.nan, 81.0], [79.0, 80.0, 82.0], 1, PLAN, chance=0.0)
    at_chance = decide([80.0, 0.0, 81.0], [79.0, 80.0, 82.0], 1, PLAN)
    assert with_nan == at_chance


def test_looks_and_seed_counts_are_checked():
    with pytest.raises(ValueError, match="looks 1 to 5"):
        decide([1, 2, 3], [1, 2, 3], 6, PLAN)
    with pytest.raises(ValueError, match="the plan has 5"):
        decide([1, 2, 3], [1, 2, 3], 2, PLAN)
    with pytest.raises(ValueError, match="at least 2"):
        decide([1.0], [1.0, 2.0], 1, PLAN)
    # a shared baseline with more seeds than the round: the fraction follows the counts
    shared = decide([90.0, 91.0, 92.0, 90.5, 91.5], [90.0] * 4 + [91.0] * 5, 2, PLAN)
    assert shared.n_b == 9 and shared.look == 2


def test_fixed_decision_is_welchs_test_and_replay_stops_at_the_first_final_look():
    rng = np.random.default_rng(2)
    a, b = rng.normal(90, 1, 10), rng.normal(89, 1, 10)
    fixed = fixed_decision(a, b, PLAN)
    assert fixed.p_value == pytest.approx(ttest_ind(a, b, equal_var=False).pvalue)
    assert fixed.nominal_alpha == pytest.approx(0.05)
    assert fixed.outcome is (Outcome.DIFFERENT if fixed.p_value < 0.05 else Outcome.UNDECIDED)
    decision = replay(a, b, PLAN)
    looks = [decide(a[:n], b[:n], k, PLAN) for k, n in enumerate(PLAN.seeds, 1)]
    first = next(d for d in looks if d.final)
    assert decision == first
    assert json.loads(json.dumps(decision.to_dict()))["outcome"] == str(decision.outcome)


def _false_positives(scale, share, plan, runs=1000, naive=False):
    rng = np.random.default_rng(3)
    a = rng.normal(0, scale, (runs, plan.max))
    b = rng.normal(0, scale, (runs, plan.max))
    a[rng.random(a.shape) < share] = -30.0  # failed seeds, far below the others
    b[rng.random(b.shape) < share] = -30.0
    hits = 0
    for row_a, row_b in zip(a, b, strict=True):
        if naive:  # Welch at alpha after every round, stop at the first p < alpha
            hits += any(
                ttest_ind(row_a[:n], row_b[:n], equal_var=False).pvalue < plan.alpha
                for n in plan.seeds
            )
        else:
            hits += replay(row_a, row_b, plan).outcome is Outcome.DIFFERENT
    return hits / runs


def test_type_one_error_over_all_looks_by_simulation():
    # 1,000 null comparisons each; binomial sd at 0.05 is 0.007
    assert _false_positives(1.0, 0.0, PLAN) <= 0.065
    assert _false_positives(5.9, 0.38, PLAN) <= 0.065  # failed seeds as data points


@pytest.mark.slow
def test_type_one_error_without_futility_and_of_the_naive_rule():
    no_futility = SeedPlan(3, 2, 10, 1.0, futility=0.0)
    assert _false_positives(1.0, 0.0, no_futility) <= 0.065
    # what the rule guards against: testing after every round at alpha inflates the rate
    assert _false_positives(1.0, 0.0, PLAN, naive=True) > 0.08
