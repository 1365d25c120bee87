"""What a report and a run open with: at most five lines, one per question a reader asks
first (the best point, what mattered, the point to run, how sure, what next), and the full
verdict list grouped (throughput, cost, noise, instrument) rather than flat.

Nothing here is judged anew: every line quotes a verdict analyze() already made (the
headline, the effects, the frontier, the repeats it suggested, the instrument's findings),
so the summary, the verdicts under it and `analyze --format json` never disagree.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .emulation import EMULATED
from .instrument import BOX_HEAD
from .sweep import num, pval

if TYPE_CHECKING:
    from .verdicts import Analysis

SECTIONS = ("throughput", "cost", "noise", "instrument")  # the order the grouped verdicts are shown in
SECTION_TITLES = {"throughput": "Throughput", "cost": "Cost (CPU, energy)", "noise": "Noise and how sure",
                  "instrument": "Instrument (the measuring tool)"}
INSTRUMENT_HEAD = ("bottleneck:", "limit:")  # the headline's instrument verdict on the best point


class Findings(list[str]):
    """analyze()'s verdicts in the order it makes them, each filed under a section
    (throughput unless `add` says otherwise)."""

    def __init__(self) -> None:
        super().__init__()
        self.section: dict[str, str] = {}

    def add(self, section: str, lines: list[str]) -> None:
        assert section in SECTIONS, section
        self.extend(lines)
        for line in lines:
            self.section.setdefault(line, section)

    def grouped(self, instrument: list[str]) -> dict[str, list[str]]:
        """Section -> its verdicts (empty sections left out); `instrument` the instrument's findings."""
        mine = set(instrument)
        out: dict[str, list[str]] = {s: [] for s in SECTIONS}
        for line in self:
            out["instrument" if line in mine else self.section.get(line, "throughput")].append(line)
        return {s: lines for s, lines in out.items() if lines}


def summary(out: Analysis) -> list[str]:
    """The five lines (fewer when a question has no answer here)."""
    if out.headline and out.headline[0].startswith(EMULATED):
        # verdicts withheld (emulation.py): no "mattered" or "nothing left to settle" drawn from their absence
        return [out.headline[0], how_sure(out),
                "next: run the same study on hosts with real CPUs (a KVM host, or real machines) for performance verdicts"]
    lines = [out.headline[0] if out.headline else f"best: {num(out.best.mean)} {out.unit}"]
    lines += [mattered(out), _box_line(out) if _instrument_line(out) else "", recommended(out), how_sure(out), next_step(out)]
    return [ln for ln in lines if ln]


def _instrument_line(out: Analysis) -> str | None:
    return next((h for h in out.headline if h.startswith(INSTRUMENT_HEAD)), None)


def _box_line(out: Analysis) -> str:
    """The headline's saturated-machine verdict on the best point ("" none): what limited the
    number as much as any parameter, so the summary never leaves it to the verdicts below."""
    return next((h for h in out.headline if h.startswith(BOX_HEAD)), "")


def mattered(out: Analysis) -> str:
    """The instrument's limit when it set the number (said once), else the parameter that
    mattered most with its change, else why none is named."""
    limit = _instrument_line(out) or _box_line(out)
    if limit:
        return limit
    effects = [p.effect for p in out.parameters if p.effect is not None]
    said = next((h for h in out.headline if h.startswith("mattered most:")), "")
    top = next((e for e in effects if said.startswith(f"mattered most: {e.param} (")), None)  # the headline's pick
    if top is not None:
        also = [e for e in effects if e.mattered and e is not top]
        return (f"mattered: {top.param} ({top.summary}; {_p(top.p_value)})"
                + ("; also " + ", ".join(f"{e.param} ({e.summary}; {_p(e.p_value)})" for e in also) if also else ""))
    if out.pairs is not None and out.pairs.spread:
        return "mattered: " + out.pairs.spread[0].text
    if not effects:
        return "mattered: one point only: nothing was swept"
    widest = max(effects, key=lambda e: e.spread_pct)
    if not any(e.tested for e in effects):
        return (f"mattered: cannot tell from single runs without a noise estimate (widest spread: {widest.param}, "
                f"{widest.spread_pct:.0f}%)")
    return (f"mattered: no swept parameter shown to matter ({out.effect_tests} test(s), 5% family-wise; widest spread "
            f"{widest.param}, {widest.spread_pct:.0f}%: not an equality)")


def _p(p: float | None) -> str:
    return "untested" if p is None else f"{pval(p)} adjusted"


def recommended(out: Analysis) -> str:
    """The recommended point on the cost frontier (host CPU first: the whole machine's cost)."""
    if not out.efficiency:
        return ""
    f = next((f for f in out.efficiency if f.cost == "cpu_host"), out.efficiency[0])
    label = ", ".join(f"{k}={v}" for k, v in f.point.items()) or "the only point"
    return (f"recommended: {label}: {num(f.gbps)} Gbit/s, {f.share_of_best * 100:.0f}% of the best, for {num(f.cost_value)} "
            f"{f.unit} of {f.name}" + (" (single runs: tentative)" if f.tentative else ""))


def how_sure(out: Analysis) -> str:
    ns = [r.n for r in out.points if r.n]
    if max(ns, default=0) <= 1:
        noise = (f"noise about {out.noise.cv * 100:.1f}% per run, estimated from the design only"
                 if out.noise is not None and out.noise.cv is not None else "no noise estimate")
        return f"how sure: single runs (N=1 per point): {noise}"
    n = f"N={min(ns)}" if min(ns) == max(ns) else f"N={min(ns)} to {max(ns)}"
    cvs = [(r.cv, r.label) for r in out.points if r.cv is not None]
    worst = max(cvs, key=lambda t: t[0], default=None)
    parts = [f"{n} per point"] + ([f"worst spread {worst[0] * 100:.1f}% (CV) at {worst[1]}"] if worst else [])
    parts += [f"{len(out.noisy)} noisy point(s)"] if out.noisy else []
    parts += [f"{len(out.bands)} point(s) whose runs split into two bands"] if out.bands else []
    short = [m for m in out.margins if not m.reached]
    parts += [f"{len(short)} point(s) short of target_margin"] if short else []
    return "how sure: " + "; ".join(parts)


def next_step(out: Analysis) -> str:
    """The one thing that would change the answer most: the instrument first, then the runs
    that settle the closest call, then a range that stopped too early."""
    if _instrument_line(out):
        return "next: measure the path, not the tool: the advice in the line above (or `nettune run --cross-check`)"
    if _box_line(out):
        return "next: measure the path, not the box: the advice in the line above, then run the study again"
    if out.repeats:
        r = out.repeats[0]
        pair = f"{r.labels[0]} vs {r.labels[1]} ({r.why}, {r.diff_pct:.1f}% apart)" if len(r.labels) == 2 else r.why
        if r.runs is None:
            return (f"next: {pair} is within the noise: more runs would not settle it; `nettune compare --margin` "
                    "says whether the difference is small enough to ignore")
        return f"next: run each of {pair} {r.runs} times, then analyze again"
    if out.noisy:
        return "next: add runs at the noisy points (or set [repeat] target_margin)"
    edge = next((c for p in out.parameters for c in p.curves if c.peak_at_edge and c.x and c.peak_x == c.x[-1]), None)
    if edge is not None:
        return f"next: extend {edge.param} beyond {edge.x[-1]}: the best is at the edge of the range swept"
    return "next: nothing left to settle at this N: the verdicts below hold"


__all__ = ["Findings", "SECTIONS", "SECTION_TITLES", "summary"]
