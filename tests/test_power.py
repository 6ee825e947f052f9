"""results/power.py against hand-computed Welch values, scipy's own Welch test, and published
power tables (Cohen 1988; G*Power gives the same)."""

import math

import pytest
from scipy.stats import t as student
from scipy.stats import ttest_ind

from blurbflow.results.power import (
    MAX_SEEDS,
    compare,
    label,
    mde_normal,
    minimal_detectable,
    seeds_needed,
    tost_p,
    welch_power,
    welch_se_df,
)

A = [90.0, 91.0, 92.0]  # mean 91, variance 1
B = [88.0, 90.0, 92.0]  # mean 90, variance 4


def test_welch_standard_error_and_degrees_of_freedom_by_hand():
    se, df = welch_se_df(1.0, 3, 4.0, 3)
    assert se == pytest.approx(math.sqrt(1 / 3 + 4 / 3))
    # (5/3)² / ((1/3)²/2 + (4/3)²/2) = (25/9) / (17/18) = 50/17
    assert df == pytest.approx(50 / 17)
    assert math.isnan(welch_se_df(0.0, 3, 0.0, 3)[1])


def test_the_interval_and_p_value_are_welchs():
    result = compare(A, B, delta=1.0)
    se, df = math.sqrt(5 / 3), 50 / 17
    margin = student.ppf(0.975, df) * se
    assert result["difference"] == pytest.approx(1.0)
    assert (result["low"], result["high"]) == pytest.approx((1 - margin, 1 + margin))
    assert result["df"] == pytest.approx(df)
    scipy = ttest_ind(A, B, equal_var=False)
    assert result["p_welch"] == pytest.approx(scipy.pvalue)
    assert (result["low"], result["high"]) == pytest.approx(tuple(scipy.confidence_interval()))


def test_tost_is_the_larger_of_two_shifted_one_sided_welch_tests():
    delta = 1.5
    se, df = math.sqrt(5 / 3), 50 / 17
    # H0 difference <= -delta: A + delta against B, one-sided "greater"; and the mirror
    lower = ttest_ind([a + delta for a in A], B, equal_var=False, alternative="greater").pvalue
    upper = ttest_ind([a - delta for a in A], B, equal_var=False, alternative="less").pvalue
    assert tost_p(1.0, se, df, delta) == pytest.approx(max(lower, upper))
    # by hand: t = (1 + 1.5)/se and (1 − 1.5)/se
    assert tost_p(1.0, se, df, delta) == pytest.approx(
        max(student.sf(2.5 / se, df), student.cdf(-0.5 / se, df))
    )


def test_equivalence_is_the_90_percent_interval_inside_the_margin():
    tight = [80.0 + 0.01 * i for i in range(10)]
    shifted = [v + 0.1 for v in tight]
    result = compare(shifted, tight, delta=0.5)
    interval90 = ttest_ind(shifted, tight, equal_var=False).confidence_interval(0.90)
    assert -0.5 < interval90.low and interval90.high < 0.5
    assert result["p_tost"] < 0.05 and result["label"] == "equivalent"
    # the same data with a margin smaller than the difference is not equivalent but different
    narrow = compare(shifted, tight, delta=0.05)
    assert narrow["p_tost"] > 0.05 and narrow["p_welch"] < 0.05
    assert narrow["label"] == "different" and narrow["low"] > 0


def test_labels():
    assert label(p_welch=0.01, p_tost=0.5) == "different"
    assert label(p_welch=0.5, p_tost=0.01) == "equivalent"
    assert label(p_welch=0.01, p_tost=0.01) == "equivalent"  # a difference within ±delta
    assert label(p_welch=0.3, p_tost=0.3) == "undecided"
    assert compare(A, B, delta=1.0)["label"] == "undecided"  # 3 seeds, se 1.3: neither


def test_mde_is_cohens_table_value_for_ten_seeds_per_side():
    # two-sided 5%, 80% power, n = 10 per group: effect size d = 1.3249 (Cohen; G*Power);
    # equal spreads and sizes make Welch's df Student's 18
    se, df = welch_se_df(1.0, 10, 1.0, 10)
    assert df == pytest.approx(18)
    mde = minimal_detectable(se, df)
    assert mde == pytest.approx(1.3249, abs=5e-4)
    assert welch_power(mde, se, df) == pytest.approx(0.8)
    assert mde > mde_normal(se) == pytest.approx(2.8016 * se, rel=1e-4)


def test_mde_tends_to_the_normal_approximation_with_many_seeds():
    se, df = welch_se_df(4.0, 2000, 9.0, 2000)
    assert minimal_detectable(se, df) == pytest.approx(mde_normal(se), rel=2e-3)


def test_mde_with_two_seeds_per_side_is_finite():
    # df between 1 and 2: the noncentral t's far tail is NaN in scipy here, counted as 0
    result = compare([1.0, 2.0], [3.0, 5.0], delta=1.0)
    assert 1 < result["df"] < 2
    assert math.isfinite(result["mde"]) and result["mde"] > mde_normal(math.sqrt(0.25 + 1))
    assert welch_power(result["mde"], math.sqrt(1.25), result["df"]) == pytest.approx(0.8)


def test_seeds_needed_iterates_n_with_the_t_power():
    # d = 1, two-sided 5%, 80%: 17 per group (Cohen; G*Power: power 0.807 at 17, 0.781 at 16);
    # the normal approximation would say 16
    assert seeds_needed(1.0, 1.0, delta=1.0) == 17
    se16, df16 = welch_se_df(1.0, 16, 1.0, 16)
    se17, df17 = welch_se_df(1.0, 17, 1.0, 17)
    assert welch_power(1.0, se16, df16) < 0.8 <= welch_power(1.0, se17, df17)
    # scale: twice the spread for twice the difference needs the same seeds
    assert seeds_needed(2.0, 2.0, delta=2.0) == 17
    assert seeds_needed(1.0, 1.0, delta=10.0) == 2  # never fewer than two
    assert seeds_needed(0.0, 0.0, delta=1.0) is None  # no spread: nothing to size
    assert seeds_needed(math.nan, 1.0, delta=1.0) is None
    assert seeds_needed(500.0, 500.0, delta=1.0) is None  # beyond MAX_SEEDS
    assert MAX_SEEDS >= 10_000


def test_too_few_seeds_or_no_spread_give_no_test():
    for sample, reference in (([1.0], [2.0, 3.0]), ([], [2.0, 3.0]), ([1.0, 1.0], [2.0, 2.0])):
        result = compare(sample, reference, delta=1.0)
        assert result["label"] == "undecided"
        assert all(math.isnan(result[k]) for k in ("low", "high", "p_welch", "p_tost", "mde"))


def test_power_is_the_noncentral_t_s_mass_beyond_the_critical_values():
    from scipy.special import nctdtr
    from scipy.stats import nct

    se, df = 1.0, 7.5
    critical = student.ppf(0.975, df)
    for difference in (0.0, 1.0, 3.0, -3.0):
        expected = nct.sf(critical, df, abs(difference)) + nct.cdf(-critical, df, abs(difference))
        assert welch_power(difference, se, df) == pytest.approx(expected, abs=1e-12)
    assert welch_power(0.0, se, df) == pytest.approx(0.05)  # no difference: the test's level
    # far out scipy.special's nctdtr gives NaN (here; stats' nct does not): power 1, not NaN
    assert math.isnan(nctdtr(10.0, 45.75, student.ppf(0.975, 10.0)))
    assert welch_power(45.75, 1.0, 10.0) == pytest.approx(1.0)
