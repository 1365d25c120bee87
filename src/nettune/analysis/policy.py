"""The one multiplicity policy behind every verdict of analyze, compare, report and check.

A verdict answers a question, and a question is often asked of several things at once:
"did a point regress?" of every point of a study, "did mult matter?" of mult at every
value of the other parameters. Asked 20 times at 5%, a question is answered "yes" by luck
about 1 time in 3. So every question is a *family* of m tests, held together to a 5%
family-wise error rate by Bonferroni's rule: each test is judged at 5%/m, its p-value is
shown adjusted (p x m, at most 1), and its interval is the matching simultaneous interval
(each at 1 - 5%/m), so the words, the interval and the adjusted p-value never disagree.

Why Bonferroni and not Holm: Holm rejects a little more often but has no intervals that
match its decisions, and every nettune verdict is read off an interval (a regression is an
interval beyond the tolerance, an equivalence an interval inside a margin). With few
significant tests, as in a regression gate, the two differ by very little.

Families: check, the points (over host pairs, each pair) of the gate; analyze, every test
behind its "mattered" verdicts over all swept parameters (analysis/effects.py), and apart
from them its cost curves, its run-band test (the points tested), its stability verdicts
(the runs tested) and its links (the pairs of a point); analyze --by, every level-against-
baseline test of all groups; compare, the configurations matched, the points of two sweeps
compared point by point, or the rows of a summary table (one comparison: a family of one).
"""
from __future__ import annotations

from .stats import LEVEL

ALPHA = 1 - LEVEL

STATEMENT = ("5% family-wise error per question (Bonferroni): a question asked of m points or comparisons judges each "
             "at 5%/m, with p-values adjusted (x m) and 95% intervals simultaneous; \"no difference shown\" never means equal "
             "(equivalence needs an interval inside a stated margin)")


def alpha_each(m: int) -> float:
    """The level each of m tests of one family is judged at."""
    return ALPHA / max(1, m)


def level_each(m: int) -> float:
    """The confidence level of each of m simultaneous 95% intervals."""
    return 1 - alpha_each(m)


def adjusted(p: float, m: int) -> float:
    """A p-value adjusted for a family of m tests (Bonferroni), at most 1."""
    return min(1.0, p * max(1, m))


def over(m: int, what: str = "tests") -> str:
    """The words that say an interval or p-value was adjusted: '' for one test."""
    return "" if m <= 1 else f"Bonferroni over {m} {what}"
