"""Study D: when the measuring instrument, not the path, set the number. One verdict per
question, computed once from all the evidence, which the headline, the findings, the run
summary and the report all print:

1. Was the tool the limit at a point? Evidence, strongest first:
   - a cross-check (`nettune run --cross-check`, analysis/cross_checks.py): another
     configuration significantly faster -> yes; the first the fastest, or the same within
     a tight interval -> no, whatever the CPU said; too noisy -> the next evidence;
   - the point within noise of its ceiling (analysis/ceilings.py: same machine, layout,
     -P and path class, never the ceiling's own path) -> yes: the instrument's limit;
   - CPU: iperf3 before 3.16 runs every stream of a process on one thread, and a process
     at >= 90% of one core measured itself (unless it already had a process per core the
     client may use) -> likely, to be confirmed by a cross-check.
2. Was the box measured rather than the path? When every core of a machine that runs both
   ends is near 100% (its busy share >= 95%), the numbers are that machine's limit: the
   test's own (client and server on different machines), or, when the test's processes and
   softirq used less than 75% of the cores, other work's (measure when the machine is quiet).
3. engine = "auto": what was picked and why (stored with every test).

The advice never names the setting already in use (engine = "auto" is not advised to a
study that ran with it).
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from ..engines.streams import SENT_SHORT, rate_text
from ..store.cpu_units import native_unit, to_cores
from ..store.records import RunRecord
from ..targets import kind_named
from .ceilings import judge_all, processes
from .cross_checks import cross_check_verdict
from .data import StudyData

TOOL_SATURATED = 90.0  # % of one core: a single-threaded tool is pegged
ONE_THREAD_BEFORE = (3, 16)  # iperf3 versions before this run every stream of a process on one thread
BOX_SATURATED = 95.0  # % of all of a machine's cores: every core near 100%
OWN_SHARE = 75.0  # % of all cores: a busy machine whose test used less than this was kept busy by other work
BOX_HEAD = "measured the box, not the path"  # how the saturated-machine verdict opens (analysis/digest.py finds it by it)


@dataclass
class PointVerdict:
    idx: int
    label: str
    cpu: dict[str, float] = field(default_factory=dict)  # side -> % of one core of a pegged one-thread iperf3
    version: str = ""
    cross: str = ""  # cross-check status: "tool", "path", "unknown" ("" none)
    cross_text: str = ""
    ceiling: str = ""  # ceiling status: "within", "above", "below", "single" ("" none)
    ceiling_text: str = ""
    box: float | None = None  # the machine's busy % when every core was near 100% and it ran both ends
    own: float | None = None  # of which the test's own processes and softirq (% of all cores), with box
    auto: bool = False  # engine = "auto" chose the configuration
    streams: int = 1

    @property
    def tool(self) -> str:
        """"yes", "likely" or "no" (not the tool's limit, or nothing says it was)."""
        if self.cross == "tool" or self.ceiling == "within":
            return "yes"
        if self.cross == "path":
            return "no"
        # a busy core is iperf3's limit only where one thread carries several streams: a single
        # stream is one thread in any tool (its busy core is that flow's own cost, not iperf3's)
        return "likely" if self.cpu and self.streams > 1 else "no"


@dataclass
class InstrumentVerdict:
    points: dict[int, PointVerdict]
    findings: list[str]
    best: int | None = None

    def headline(self) -> list[str]:
        """The instrument's lines for the headline, about the best point."""
        v = self.points.get(self.best) if self.best is not None else None
        if v is None:
            return []
        out = []
        if v.tool == "yes":
            # the cross-check's own line stands under its table: the headline says what it found
            # in its own words, so a report that shows both never prints the verdict twice
            why = (v.cross_text.split(" -> ", 1)[-1].replace("the first number measured", "the study's number measured")
                   if v.cross == "tool" else v.ceiling_text)
            out.append(f"bottleneck: the instrument, not the network: {why}")
        elif v.tool == "likely":
            side, top = max(v.cpu.items(), key=lambda kv: kv[1])
            out.append(f"bottleneck: likely the tool, not the network: iperf3 {v.version} runs every stream of a process on one "
                       f"thread (before 3.16) and its {side} used up to {top:.0f}% of a core; {advice(v)}")
        elif v.cross == "path" and v.cpu:
            out.append(f"not the tool's limit, although iperf3's {max(v.cpu, key=v.cpu.__getitem__)} used up to "
                       f"{max(v.cpu.values()):.0f}% of a core: cross-check {v.cross_text}")
        if v.box is not None:
            out.append(box_text(v))
        return out

    @property
    def tool_bound(self) -> list[int]:
        """Points whose runs say (or suggest) the tool was the limit, for --cross-check."""
        return [i for i, v in self.points.items() if v.cpu or v.cross == "tool"]


def _version(text: str | None) -> tuple[int, int] | None:
    mt = re.search(r"(\d+)\.(\d+)", text or "")
    return (int(mt.group(1)), int(mt.group(2))) if mt else None


def process_cpu(r: RunRecord) -> list[tuple[float | None, float | None]]:
    """(client, server) CPU % of one core of each process of the run."""
    rows = r.fanout.per_process if r.fanout is not None else []
    if rows:
        return [(p.cpu_client or p.tool_cpu.get("host_total"), p.cpu_server or p.tool_cpu.get("remote_total")) for p in rows]
    return [(r.cpu_client or r.tool_cpu.get("host_total"), r.cpu_server or r.tool_cpu.get("remote_total"))]


def run_tool_bound(r: RunRecord, cores: int | None) -> dict[str, float]:
    """Side -> the CPU % of its busiest process when this run measured a pegged one-thread
    iperf3 (empty: not tool-bound)."""
    v = _version(r.tool_version)
    if r.engine != "iperf3" or v is None or v >= ONE_THREAD_BEFORE:
        return {}
    if cores is not None and processes(r) >= cores:
        return {}  # a process per core already: the machine's limit, not one thread's
    out: dict[str, float] = {}
    for client, server in process_cpu(r):
        for side, val in (("client", client), ("server", server)):
            if val is not None and float(val) >= TOOL_SATURATED:
                out[side] = max(out.get(side, 0.0), float(val))
    return out


def advice(v: PointVerdict) -> str:
    """What to try next, never the setting in use."""
    if v.streams <= 1:
        return "one stream is one thread in any tool: more streams (parallel), not another tool, can lift it"
    if v.auto:  # auto is in use: what would give it a better choice
        return ("engine = \"auto\" chose this; with iperf2 or iperf3 >= 3.16 on every host it picks a threaded tool, "
                "or confirm with `nettune run --cross-check`")
    return ("use engine = \"auto\" (here: iperf2, iperf3 >= 3.16 or iperf3 fanned out) or processes = \"auto\", "
            "or confirm with `nettune run --cross-check`")


def box_text(v: PointVerdict) -> str:
    head = (f"{BOX_HEAD}: every core of the machine running both client and server was busy "
            f"({v.box:.0f}% of all cores{' at ' + v.label if v.label else ''})")
    if v.own is not None and v.own < OWN_SHARE:
        return (f"{head}, and the test's own client, server and softirq used only about {v.own:.0f}% of them: other work on "
                "the machine took the rest; measure again when nothing else runs there")
    return f"{head}; put client and server on different machines"


def _own(data: StudyData, runs: list[RunRecord]) -> float | None:
    """The test's own share of all the machine's cores (its client's and server's processes
    and the machine's softirq work), mean over the runs; None when a figure is missing."""
    cores = data.host_cores()
    shares = []
    for r in runs:
        parts = [to_cores(value, r.cpu_units.get(k) or native_unit(k), cores)
                 for k, value in (("cpu_client", r.cpu_client), ("cpu_server", r.cpu_server),
                                         ("cpu_host_softirq", r.cpu_host_softirq))]
        if parts[0] is None or parts[1] is None or not cores:
            return None
        shares.append(100.0 * sum(p or 0.0 for p in parts) / cores)
    return sum(shares) / len(shares) if shares else None


def _box(data: StudyData, runs: list[RunRecord]) -> float | None:
    """The machine's mean busy % over the runs when it ran both ends and every core was
    near 100% (None otherwise, or when its CPU or core count is unknown)."""
    kind = kind_named(data.study.get("target_kind") or (data.spec().get("target") or {}).get("kind"))
    machines = {str((f or {}).get("machine")) for f in data.facts.values() if isinstance(f, dict) and (f or {}).get("machine")}
    if not (kind is not None and kind.both_ends_here(data.spec())) and len(machines) != 1:
        return None  # both ends on one machine: a lab, loopback, or hosts that name the same machine
    cores = data.host_cores()
    busy = []
    for r in runs:
        c = to_cores(r.cpu_host, r.cpu_units.get("cpu_host") or native_unit("cpu_host"), cores)
        if c is not None and cores:
            busy.append(100.0 * c / cores)
    if not busy:
        return None
    mean = sum(busy) / len(busy)
    return mean if mean >= BOX_SATURATED else None


def verdict(data: StudyData, params: list[str], best: int | None = None) -> InstrumentVerdict:
    """Every point's instrument verdict and the findings, computed once."""
    cores = data.host_cores()
    checks, notes = judge_all(data, params)
    crosses = {c.get("point_idx"): c for c in data.study.get("cross_checks") or []}
    points: dict[int, PointVerdict] = {}
    for p in data.points:
        v = PointVerdict(p.idx, p.label(params) if params else "")
        runs = [r for r in p.counted if r.ok]
        for r in runs:
            for side, val in run_tool_bound(r, cores).items():
                v.cpu[side] = max(v.cpu.get(side, 0.0), val)
                v.version = r.tool_version or v.version
        if runs:
            v.auto = runs[0].engine_choice is not None
            v.streams = runs[0].n_streams or 1
        c = crosses.get(p.idx)
        if c is not None:
            cv = cross_check_verdict(c.get("rows") or [])
            v.cross, v.cross_text = cv.status, f"at {c.get('label')}: {cv.text}"
        if p.idx in checks:
            v.ceiling, v.ceiling_text = checks[p.idx].status, checks[p.idx].text
        v.box = _box(data, runs)
        v.own = _own(data, runs) if v.box is not None else None
        points[p.idx] = v
    return InstrumentVerdict(points, choice_findings(data, params) + _findings(points) + notes + sent_short(data, params), best)


def sent_short(data: StudyData, params: list[str]) -> list[str]:
    """Points whose sender sent less than SENT_SHORT of the rate it was asked for (UDP, or
    TCP with a bitrate): their loss and jitter are of what was sent. Each test's warnings say
    it; analyze and the report say it too, so a reader of the verdicts alone is told."""
    short: list[tuple[float, str, RunRecord]] = []
    for p in data.points:
        runs = [r for r in p.counted if r.ok and r.offered_bps and r.sender_bps is not None]
        worst = min(runs, key=lambda r: float(r.sender_bps or 0.0) / float(r.offered_bps or 1.0), default=None)
        if worst is not None and float(worst.sender_bps or 0.0) < SENT_SHORT * float(worst.offered_bps or 0.0):
            short.append((float(worst.sender_bps or 0.0) / float(worst.offered_bps or 1.0), p.label(params) if params else "the point", worst))
    if not short:
        return []
    share, label, r = min(short, key=lambda t: t[0])
    return [f"the sender sent less than {SENT_SHORT * 100:.0f}% of the rate asked for at {len(short)} point(s) (least: {label}, "
            f"{rate_text(float(r.sender_bps or 0.0))} of the {rate_text(float(r.offered_bps or 0.0))} asked for, {share * 100:.0f}%): "
            "its host held it back, so loss and jitter there are of what it sent, not of the rate asked for"]


def _findings(points: dict[int, PointVerdict]) -> list[str]:
    out = []
    likely = [v for v in points.values() if v.tool == "likely"]
    by_side: dict[str, list[PointVerdict]] = defaultdict(list)
    for v in likely:
        for side in v.cpu:
            by_side[side].append(v)
    for side, seen in by_side.items():
        labels = [v.label or "the point" for v in seen]
        top = max(v.cpu[side] for v in seen)
        out.append(f"the tool was likely the bottleneck: iperf3 {seen[0].version} runs every stream of a process on one thread "
                   f"(before 3.16) and its {side} process used up to {top:.0f}% of one core at {len(seen)} point(s) "
                   f"({'; '.join(labels[:3])}{'...' if len(labels) > 3 else ''}): those numbers may measure iperf3, not the network; "
                   f"{advice(max(seen, key=lambda v: v.streams))}")
    out += [f"cross-check {v.cross_text}" for v in points.values() if v.cross]
    out += [v.ceiling_text for v in points.values() if v.ceiling]
    boxed = [v for v in points.values() if v.box is not None]
    if boxed:
        worst = max(boxed, key=lambda v: v.box or 0.0)
        out.append(box_text(worst) + (f" ({len(boxed)} point(s))" if len(boxed) > 1 else ""))
    return out


def choice_findings(data: StudyData, params: list[str]) -> list[str]:
    by: dict[tuple[str, str], list[str]] = {}
    for p in data.points:
        for r in p.runs:
            c = r.engine_choice
            if c is not None:
                seen = by.setdefault((c.label, c.reason), [])
                if p.label(params) not in seen:
                    seen.append(p.label(params))
                break
    out = []
    for (label, reason), pts in by.items():
        where = f" at {'; '.join(pts[:3])}{'...' if len(pts) > 3 else ''}" if params and len(pts) < len(data.points) else ""
        out.append(f"engine auto picked {label}{where}: {reason}")
    return out


def tool_bound_points(data: StudyData, params: list[str]) -> tuple[str, dict[str, list[tuple[str, float]]], list[int]]:
    """(iperf3 version, side -> [(point label, %)], indices of the points whose CPU says
    the tool was the limit): what `nettune run --cross-check` measures again. The points the
    findings call likely tool-bound, no more: a single stream's busy core is that flow's
    own cost in any tool (PointVerdict.tool), so re-running it with another tool would answer
    a question analyze never asked."""
    v = verdict(data, params)
    hits: dict[str, list[tuple[str, float]]] = defaultdict(list)
    version = ""
    bound = [pv for pv in v.points.values() if pv.cpu and pv.streams > 1]
    for pv in bound:
        for side, val in pv.cpu.items():
            hits[side].append((pv.label, val))
            version = pv.version or version
    return version, hits, [pv.idx for pv in bound]


def tool_bound(data: StudyData) -> dict[str, float]:
    """Side -> the highest CPU % of a pegged single-threaded iperf3 (empty: not tool-bound)."""
    return {side: max(v for _, v in seen) for side, seen in tool_bound_points(data, data.params)[1].items()}


def instrument(data: StudyData, params: list[str]) -> list[str]:
    """Every instrument finding (what engine = "auto" picked, tool-bound points, ceilings,
    cross-checks, a saturated machine)."""
    return verdict(data, params).findings


__all__ = ["InstrumentVerdict", "PointVerdict", "instrument", "run_tool_bound", "tool_bound", "tool_bound_points", "verdict"]
