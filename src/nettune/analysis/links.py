"""A study over host pairs (`[workload] pairs`: a mesh, a star, a list): a pair is a link,
not a repeat. Each pair gets its own statistics (N = the repeats of that pair), a parallel
round its aggregate (the sum its pairs reached together, with a CI over repeats), and the
spread between pairs a verdict when it is real: "link c->d is 38% below the others" only
when that pair's interval does not overlap any other pair's, the intervals simultaneous over
the point's pairs (Bonferroni, analysis/policy.py: the question is asked of every pair) and
made from the noise of all the point's pairs pooled.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from scipy import stats as sst

from .data import METRICS, Metric, PointData, StudyData
from .serial import JsonRecord
from .policy import level_each
from .stats import summarize, t_critical
from .sweep import num


@dataclass
class PairStats(JsonRecord):
    """One pair at one point: its counted runs summarised in the metric's unit."""

    point: dict[str, Any]
    pair: str  # "server->client"
    server: str | None
    client: str | None
    n: int  # counted runs of this pair (its repeats)
    failed: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    half_width: float | None
    rounds: list[int] = field(default_factory=list)  # the rounds it ran in (0-based)


@dataclass
class RoundStats(JsonRecord):
    """A parallel round at one point: what its pairs reached together, over repeats."""

    point: dict[str, Any]
    round: int  # 0-based
    pairs: list[str]
    n: int  # repeats of the round
    mean: float | None  # Gbit/s
    ci_low: float | None
    ci_high: float | None
    half_width: float | None


@dataclass
class PairSpread(JsonRecord):
    """A pair whose interval lies wholly below (or above) every other pair's, at one point."""

    point: dict[str, Any]
    pair: str
    direction: str  # below or above
    pct: float  # how far from the mean of the other pairs, in %
    text: str


@dataclass
class PairAnalysis(JsonRecord):
    pairs: list[PairStats] = field(default_factory=list)
    rounds: list[RoundStats] = field(default_factory=list)
    spread: list[PairSpread] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)


def pair_stats(p: PointData, m: Metric, params: list[str]) -> list[PairStats]:
    point = {k: p.params.get(k) for k in params}
    failed: dict[str, int] = {}
    for r in p.runs:
        if r.pair is not None and not r.ok and not r.warmup:
            failed[r.pair] = failed.get(r.pair, 0) + 1
    runs = p.by_pair()
    out = []
    for pair in list(runs) + [x for x in failed if x not in runs]:
        rs = runs.get(pair, [])
        s = summarize([v for v in (m.value(r) for r in rs) if v is not None]).scaled(m.scale)
        first = rs[0] if rs else next(r for r in p.runs if r.pair == pair)
        rounds = sorted({r.round for r in rs if r.round is not None})
        out.append(PairStats(point, pair, first.server, first.client, s.n, failed.get(pair, 0), s.mean, s.ci_low,
                             s.ci_high, s.half_width, rounds))
    return out


def round_stats(p: PointData, params: list[str]) -> list[RoundStats]:
    """Parallel rounds only: their stored aggregate (round_total_bps) per repeat, in Gbit/s."""
    point = {k: p.params.get(k) for k in params}
    per_round: dict[int, dict[int, float]] = {}
    pairs: dict[int, list[str]] = {}
    for r in p.counted:
        if r.round is None or r.round_total_bps is None:
            continue
        per_round.setdefault(r.round, {})[r.run] = r.round_total_bps  # the same on every pair of the round
        pairs.setdefault(r.round, [])
        if r.pair and r.pair not in pairs[r.round]:
            pairs[r.round].append(r.pair)
    out = []
    for rnd in sorted(per_round):
        s = summarize(list(per_round[rnd].values())).scaled(METRICS["total"].scale)
        out.append(RoundStats(point, rnd, pairs[rnd], s.n, s.mean, s.ci_low, s.ci_high, s.half_width))
    return out


def simultaneous(stats: list[PairStats]) -> list[PairStats]:
    """The pairs' intervals for the spread verdict: simultaneous over the point's pairs
    (Bonferroni), each from the pooled coefficient of variation of all its pairs' repeats
    (the links of one point share a machine and a setting: one noise, estimated on
    sum(n - 1) degrees of freedom rather than on each pair's one or two). Empty when no pair
    has repeats."""
    rep = [s for s in stats if s.n >= 2 and s.mean and s.half_width is not None]
    df = sum(s.n - 1 for s in rep)
    if not df:
        return []
    # back from each pair's t half-width to its sd: hw = t(0.975, n-1) sd / sqrt(n)
    cv2 = math.fsum((s.n - 1) * (s.half_width * math.sqrt(s.n) / t_critical(s.n) / s.mean) ** 2 for s in rep if s.half_width is not None and s.mean) / df
    q = float(sst.t.ppf(1 - (1 - level_each(len(stats))) / 2, df))
    out = []
    for s in stats:
        if s.n and s.mean is not None:
            hw = q * math.sqrt(cv2) * abs(s.mean) / math.sqrt(s.n)
            out.append(replace(s, ci_low=s.mean - hw, ci_high=s.mean + hw, half_width=hw))
    return out


def spread(stats: list[PairStats], label: str, unit: str) -> list[PairSpread]:
    """Pairs whose CI does not overlap any other pair's CI, with how far they sit from the rest."""
    have = [s for s in stats if s.ci_low is not None and s.ci_high is not None and s.mean is not None]
    out: list[PairSpread] = []
    if len(have) < 3:  # with two pairs "the others" is one link: the comparison is the pair table itself
        return out
    for s in have:
        others = [o for o in have if o is not s]
        rest = sum(o.mean for o in others if o.mean is not None) / len(others)
        if not rest:
            continue
        assert s.ci_low is not None and s.ci_high is not None and s.mean is not None
        if s.ci_high < min(o.ci_low for o in others if o.ci_low is not None):
            direction = "below"
        elif s.ci_low > max(o.ci_high for o in others if o.ci_high is not None):
            direction = "above"
        else:
            continue
        pct = abs(s.mean / rest - 1) * 100
        where = f" at {label}" if label else ""
        text = (f"link {s.pair} is {pct:.0f}% {direction} the others{where} ({num(s.mean)} vs {num(rest)} {unit} on average; "
                f"its 95% CI, simultaneous over the {len(have)} pairs, overlaps none of theirs)")
        out.append(PairSpread(s.point, s.pair, direction, pct, text))
    return out


def analyze_pairs(data: StudyData, m: Metric, params: list[str]) -> PairAnalysis:
    """Per-pair and per-round statistics and the spread verdicts of every point over pairs."""
    out = PairAnalysis()
    for p in data.points:
        if not p.has_pairs:
            continue
        stats = pair_stats(p, m, params)
        out.pairs += stats
        rounds = round_stats(p, params) if m.name == "total" else []
        out.rounds += rounds
        where = p.label(params) if params else ""
        found = spread(simultaneous(stats), where, m.label)  # one family: the point's pairs
        out.spread += found
        out.findings += [f.text for f in found]
        if stats and not found and any(s.n >= 2 for s in stats) and len(stats) >= 3:
            out.findings.append(f"no link of the {len(stats)}{' at ' + where if where else ''} was shown to differ from the others "
                                "(every pair's simultaneous 95% CI overlaps another's)")
        single = [s.pair for s in stats if s.n == 1]
        if single:
            out.findings.append(f"{len(single)} pair(s){' at ' + where if where else ''} have one counted run each: no CI, "
                                "so no verdict on the spread between links; set [repeat] runs >= 2")
        for r in rounds:
            ci = f" ± {num(r.half_width)}" if r.half_width is not None else ""
            out.findings.append(f"round {r.round + 1}{' at ' + where if where else ''} ({', '.join(r.pairs)} at once): "
                                f"{num(r.mean)}{ci} Gbit/s together (N={r.n})")
    return out
