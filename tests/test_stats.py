"""Statistics against known answers and known distributions: summaries, the t interval,
Welch's test (against scipy), MAD outliers, verdict words, the adaptive stopping rule."""
import math
import random
import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sst

from nettune.analysis.compare import compare_values
from nettune.analysis.stats import adaptive_rounds, mad_outliers, needs_more_runs, summarize, welch
from nettune.errors import NettuneError, SpecError
from nettune import parse_study
from nettune.studyfile.models import Repeat


def test_summary_of_known_values():
    s = summarize([1, 2, 3, 4, 5])
    assert (s.n, s.mean, s.median, s.min, s.max) == (5, 3, 3, 1, 5)
    assert s.stdev == pytest.approx(math.sqrt(2.5))  # sample (n-1), not population
    assert s.cv == pytest.approx(math.sqrt(2.5) / 3)
    lo, hi = sst.t.interval(0.95, 4, loc=3, scale=math.sqrt(2.5) / math.sqrt(5))
    assert (s.ci_low, s.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    # Student's t with 4 degrees of freedom (2.776), not the normal 1.96
    assert s.half_width == pytest.approx(2.7764451 * math.sqrt(2.5) / math.sqrt(5))
    assert summarize([4, 1, 3, 2]).median == 2.5


def test_summary_in_other_units():
    s = summarize([10e9, 12e9, 11e9]).scaled(1e-9)
    assert (s.mean, s.stdev, s.min, s.max) == (pytest.approx(11), pytest.approx(1), pytest.approx(10), pytest.approx(12))
    assert s.half_width == pytest.approx(4.302653 / math.sqrt(3)) and s.cv == pytest.approx(1 / 11)
    assert s.margin == pytest.approx(s.half_width / 11)


def test_summary_of_one_and_no_value():
    one = summarize([7.0])
    assert (one.n, one.mean, one.median, one.stdev, one.ci_low, one.cv) == (1, 7.0, 7.0, None, None, None)
    assert summarize([]).n == 0 and summarize([]).mean is None


@settings(max_examples=12, derandomize=True, deadline=None)
@given(n=st.sampled_from([3, 5, 10, 30]), mu=st.floats(-1e3, 1e3), sigma=st.floats(0.01, 100))
def test_95_interval_covers_the_true_mean_95_percent_of_the_time(n, mu, sigma):
    rng = random.Random(f"{n}-{mu}-{sigma}")  # fixed seed per example: no flaky test
    trials = 2000
    hits = sum(1 for _ in range(trials) if (s := summarize([rng.gauss(mu, sigma) for _ in range(n)])).ci_low <= mu <= s.ci_high)
    # binomial sd at 2000 trials is 0.5%; 2% tolerance is 4 sd
    assert abs(hits / trials - 0.95) < 0.02


def test_normal_quantile_would_undercover_small_samples():
    # What the t interval protects against: 1.96 with n=3 covers only ~80%.
    rng = random.Random(3)
    trials, z_hits, t_hits = 3000, 0, 0
    for _ in range(trials):
        xs = [rng.gauss(0, 1) for _ in range(3)]
        s = summarize(xs)
        z_hits += abs(s.mean) <= 1.96 * s.stdev / math.sqrt(3)
        t_hits += s.ci_low <= 0 <= s.ci_high
    assert z_hits / trials < 0.85 < 0.93 < t_hits / trials


samples = st.lists(st.floats(0, 1000, allow_nan=False), min_size=2, max_size=30)


@settings(max_examples=200, derandomize=True)
@given(a=samples, b=samples)
def test_welch_matches_scipy(a, b):
    assume(summarize(a).stdev > 1e-3 and summarize(b).stdev > 1e-3)
    w = welch(a, b)
    ref = sst.ttest_ind(b, a, equal_var=False)
    assert w.t == pytest.approx(ref.statistic, rel=1e-6, abs=1e-9)
    assert w.p_value == pytest.approx(ref.pvalue, rel=1e-6, abs=1e-12)
    ci = ref.confidence_interval(0.95)
    assert (w.ci_low, w.ci_high) == (pytest.approx(ci.low, rel=1e-6, abs=1e-9), pytest.approx(ci.high, rel=1e-6, abs=1e-9))


def test_welch_without_noise():
    assert welch([5, 5, 5], [5, 5]).p_value == 1.0
    w = welch([5, 5, 5], [6, 6])
    assert w.p_value == 0.0 and w.diff == 1
    with pytest.raises(ValueError):
        welch([1], [1, 2])


def test_mad_flags_outliers_and_keeps_ordinary_runs():
    assert mad_outliers([100, 101, 99, 100.5, 60]) == [4]
    assert mad_outliers([100, 101, 99, 100.5, 100.2]) == []
    assert mad_outliers([10, 10, 10, 10, 50]) == [4]  # MAD = 0: mean-absolute-deviation fallback
    assert mad_outliers([10, 10, 10, 10, 10]) == []
    assert mad_outliers([1, 100]) == []  # two runs: neither is the odd one out
    # flagged, never dropped: the summary still uses every run
    s = summarize([100, 101, 99, 100.5, 60])
    assert s.outliers == [4] and s.n == 5 and s.min == 60


A = [100.0, 101.0, 99.0, 100.5, 99.5]


def test_verdict_faster():
    c = compare_values(A, [112.0, 113.0, 111.0, 112.5, 111.5])
    assert c.verdict == "faster"
    assert re.fullmatch(r"b is 12\.0% faster \(95% CI \d+\.\d to \d+\.\d%\)", c.text), c.text
    assert 1 < c.ci_low < c.ratio < c.ci_high and c.p_value < 0.001 and (c.n_a, c.n_b) == (5, 5)


def test_verdict_slower():
    c = compare_values(A, [90.0, 91.0, 89.0, 90.5, 89.5])
    assert c.verdict == "slower"
    m = re.fullmatch(r"b is 10\.0% slower \(95% CI (\d+\.\d) to (\d+\.\d)%\)", c.text)
    assert m and float(m.group(1)) < 10 < float(m.group(2))
    assert c.ci_high < 1


def test_verdict_no_difference_shown_is_not_equal():
    c = compare_values(A, [100.5, 99.5, 101.0, 99.0, 100.0])
    assert c.verdict == "inconclusive" and not c.equivalent  # not significant is never "equal"
    assert re.fullmatch(r"no difference shown \([+-]\d+\.\d%, 95% CI -\d+\.\d to \d+\.\d%\)", c.text), c.text
    assert c.ci_low < 1 < c.ci_high and c.p_value > 0.05
    # equivalence only against a stated margin, from the 90% interval (two one-sided tests)
    eq = compare_values(A, [100.5, 99.5, 101.0, 99.0, 100.0], margin=0.02)
    assert eq.verdict == "equivalent" and eq.equivalent and 0.98 <= eq.tost_low <= eq.tost_high <= 1.02
    assert "equivalent within +-2%" in eq.text and "two one-sided tests" in eq.text
    wide = compare_values(A, [90.0, 110.0, 100.0, 95.0, 105.0], margin=0.02)
    assert wide.verdict == "inconclusive" and not wide.equivalent and "not shown equivalent" in wide.text


def test_verdict_lower_is_better():
    # elapsed seconds of a build: lower is faster
    c = compare_values([100.0, 101, 99, 100], [90.0, 91, 89, 90], higher_is_better=False, metric="duration")
    assert c.verdict == "faster" and c.text.startswith("b is 10.0% faster")
    c = compare_values([100.0, 101, 99, 100], [110.0, 111, 109, 110], higher_is_better=False)
    assert c.verdict == "slower" and c.text.startswith("b is 10.0% slower")
    c = compare_values([1.0, 1.1, 0.9], [2.0, 2.1, 1.9], higher_is_better=False, words=("better", "worse"))
    assert c.verdict == "worse"


def test_p_value_and_interval_agree():
    rng = random.Random(7)
    for _ in range(300):
        a = [rng.gauss(100, 5) for _ in range(4)]
        b = [rng.gauss(104, 5) for _ in range(5)]
        c = compare_values(a, b)
        assert (c.verdict != "inconclusive") == (not c.ci_low <= 1 <= c.ci_high) == (c.p_value < 0.05)


def test_fieller_interval_inverts_welch_and_counts_the_baseline_noise():
    """The interval of the ratio is Fieller's: the ratios Welch's test (df at rho = 1) does not
    reject, so its ends give p = 0.05 exactly; it is wider than (b - a) / mean_a's."""
    from scipy import stats as sst

    from nettune.analysis.ratio import Part, ratio_test

    a, b = [9.1, 9.5, 9.3, 9.8, 9.4], [10.2, 9.9, 10.6, 10.1]
    pa, pb = Part(5, sum(a) / 5, float(sst.tstd(a))), Part(4, sum(b) / 4, float(sst.tstd(b)))
    r = ratio_test([pa], [pb])
    assert r.p_value == pytest.approx(sst.ttest_ind(b, a, equal_var=False).pvalue)
    q = sst.t.ppf(0.975, r.df)
    for rho in (r.ci_low, r.ci_high):  # at each end the t statistic of b - rho a is exactly q
        t = abs(pb.mean - rho * pa.mean) / (pb.sd**2 / pb.n + rho**2 * pa.sd**2 / pa.n) ** 0.5
        assert t == pytest.approx(q)
    w = sst.ttest_ind(b, a, equal_var=False).confidence_interval()
    assert r.ci_high - r.ci_low > (w.high - w.low) / pa.mean


def test_comparison_needs_two_runs_per_side():
    with pytest.raises(NettuneError, match="at least 2"):
        compare_values([1.0], [1.0, 2.0])
    with pytest.raises(NettuneError, match="undefined"):
        compare_values([0.0, 0.0], [1.0, 2.0])


def test_stopping_rule():
    assert needs_more_runs([100.0, 100.1], 0.03, 3, 10)  # below min_runs
    assert not needs_more_runs([100.0, 100.1, 99.9], 0.03, 3, 10)  # tight: stop at min_runs
    assert needs_more_runs([100.0, 80.0, 120.0], 0.03, 3, 10)  # +-50%: keep going
    assert not needs_more_runs([100.0, 80.0, 120.0] * 3 + [90.0], 0.03, 3, 10)  # max reached
    assert needs_more_runs([100.0, None, 100.1], 0.03, 3, 10)  # a failure is not a result...
    assert not needs_more_runs([None] * 10, 0.03, 3, 10)  # ...but it is an attempt


def test_stopping_rule_reaches_the_target_margin():
    rng = random.Random(11)
    vals: list[float | None] = []
    while needs_more_runs(vals, 0.02, 3, 200):
        vals.append(rng.gauss(100, 5))
    s = summarize(vals)
    assert 3 <= s.n < 200 and s.margin <= 0.02
    assert summarize(vals[:-1]).margin > 0.02  # and not one run later than needed


def test_adaptive_rounds_picks_the_points_still_noisy():
    rep = Repeat(min_runs=3, max_runs=6, target_margin=0.05)
    got = {0: [100.0, 100.2, 99.9], 1: [100.0, 70.0, 130.0], 2: [1.0, 2.0]}
    assert adaptive_rounds(rep, got) == [1, 2]
    assert adaptive_rounds(rep, {0: [1.0] * 6, 1: [1.0, 9.0] * 3}) == []
    shuffled = Repeat(min_runs=3, max_runs=6, target_margin=0.05, order="shuffled", seed=4)
    many = {i: [1.0] for i in range(10)}
    assert adaptive_rounds(shuffled, many, 1) == adaptive_rounds(shuffled, many, 1) != adaptive_rounds(rep, many)


STUDY = """
name = "t"
[target]
kind = "local"
[repeat]
"""


def test_repeat_fields_in_the_study_file():
    s = parse_study(STUDY + "min_runs = 5\nmax_runs = 16\ntarget_margin = 0.03\n")
    assert (s.repeat.adaptive, s.repeat.min_counted, s.repeat.max_counted) == (True, 5, 16)
    s = parse_study(STUDY + "target_margin = 0.05\n")
    assert (s.repeat.min_runs, s.repeat.max_runs) == (3, 10)
    assert parse_study(STUDY + "runs = 4\n").repeat.max_counted == 4


@pytest.mark.parametrize("body, words", [
    ("min_runs = 5\nmax_runs = 3\ntarget_margin = 0.03\n", "must not exceed"),
    ("runs = 5\ntarget_margin = 0.03\n", "not both"),
    ("min_runs = 5\n", "need target_margin"),
    ("target_margin = 1.5\n", "less than 1"),
    ("target_margin = 0\n", "allowed more than 0, less than 1"),
])
def test_repeat_fields_rejected_with_one_line(body, words):
    with pytest.raises(SpecError) as e:
        parse_study(STUDY + body, "s.toml")
    assert words in str(e.value) and "\n" not in str(e.value) and "repeat" in str(e.value)


def test_an_interval_of_a_quantity_that_cannot_be_negative_stops_at_zero():
    """Two runs of 11.8 and 15.6 Gbit/s: Student's t at N=2 reaches -10.4; throughput cannot,
    so the interval is cut at 0 (found in a study D trial: 'best: 13.7 Gbit/s (95% CI -10.3
    to 37.6, N=2)'); the upper end and the precision (half width) are the t interval's.
    Signed values (differences) keep their negative end."""
    import statistics

    from nettune.analysis.stats import summarize, t_critical

    s = summarize([11.8, 15.6])
    hw = t_critical(2) * statistics.stdev([11.8, 15.6]) / math.sqrt(2)
    assert s.ci_low == 0.0 and s.ci_high == pytest.approx(13.7 + hw) and s.half_width == pytest.approx(hw)
    d = summarize([11.8, 15.6], signed=True)
    assert d.ci_low == pytest.approx(13.7 - hw) and d.ci_low < 0
    assert summarize([-1.0, 3.0]).ci_low < 0  # a negative value: not a non-negative quantity, left as it is
    assert summarize([30.0, 31.0, 32.0]).ci_low == pytest.approx(31.0 - t_critical(3) * 1.0 / math.sqrt(3))  # away from 0: unchanged
