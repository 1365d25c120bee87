"""Coverage of the 95% intervals nettune reports (issue 12), on seeded synthetic draws:
studies of 8 points with n = 3, 5 or 10 runs each, every point's interval made as
`analyze` makes it (stats.study_summaries: Student's t, or for skewed runs the
log-scale or BCa interval). On normal runs it covers the true mean about 95% of the time;
on lognormal runs (sigma 1), where the t interval covers only ~82%, nettune's covers
clearly more."""
import math

import numpy as np
import pytest

from nettune.analysis import intervals
from nettune.analysis.stats import study_summaries, summarize

POINTS, STUDIES = 8, 150


def coverage(draw, true_mean, n: int, seed: int) -> tuple[float, float, dict[str, int]]:
    """(coverage of nettune's intervals, coverage of plain t intervals, methods used)."""
    rng = np.random.default_rng(seed)
    hit = hit_t = total = 0
    used: dict[str, int] = {}
    for _ in range(STUDIES):
        scales = rng.uniform(1, 50, POINTS)  # points of one study differ in level, not in shape
        groups = [list(draw(rng, n) * k) for k in scales]
        sums, method, _ = study_summaries(groups)
        used[method] = used.get(method, 0) + 1
        for g, s, k in zip(groups, sums, scales):
            mu = true_mean * k
            hit += s.ci_low <= mu <= s.ci_high
            t = summarize(g)
            hit_t += t.ci_low <= mu <= t.ci_high
            total += 1
    return hit / total, hit_t / total, used


def normal(rng, n):
    return rng.normal(10.0, 1.0, n)


def lognormal(rng, n):
    return rng.lognormal(0.0, 1.0, n)


@pytest.mark.parametrize("n", [3, 5, 10])
def test_normal_runs_keep_the_t_interval_and_its_coverage(n):
    cov, cov_t, used = coverage(normal, 10.0, n, seed=n)
    assert cov >= 0.93 and abs(cov - cov_t) < 0.02  # nominal 95%: the t interval, kept
    assert used.get("t", 0) >= 0.9 * STUDIES  # normal runs are rarely called skewed


@pytest.mark.parametrize("n", [3, 5, 10])
def test_skewed_runs_get_an_interval_that_covers(n):
    cov, cov_t, used = coverage(lognormal, math.exp(0.5), n, seed=100 + n)
    assert cov_t < 0.88  # the plain t interval undercovers on lognormal runs (the issue: 83-85%)
    assert cov >= 0.88 and cov >= cov_t + 0.05
    assert used.get(intervals.LOG, 0) >= 0.8 * STUDIES


def test_left_skewed_runs_get_bca_and_the_table_says_so():
    rng = np.random.default_rng(7)
    # throughput with occasional slow runs: a long tail to the left
    groups = [list(100 - rng.lognormal(0, 1.0, 8) * 5) for _ in range(POINTS)]
    sums, method, why = study_summaries(groups)
    assert method == intervals.BCA and "left-skewed" in why
    assert all(s.interval == intervals.BCA and s.ci_low < s.mean < s.ci_high for s in sums)
    assert intervals.NAMES[method].startswith("BCa bootstrap")
