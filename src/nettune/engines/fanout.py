"""Fan-out: one test as N tool processes at once (`[workload] processes = N`).

N server/client pairs on consecutive ports, the streams split as evenly as they go, run
together by run/fanout.py; their N results are summed here into the one result a test
stores. This lifts iperf3's 128-stream cap and, before 3.16, its one thread for every
stream: each process is one more thread.

Only arithmetic on results lives here (the engines' rule: no processes, no network).
The sum is exact: throughput, bytes, retransmits and packets add up; cwnd is the largest,
RTT the byte-weighted mean, process CPU (one core = 100%) adds up. Each process keeps its
row in its `fanout` part (`per_process`: port, streams, its numbers, CPU, both command
lines and outputs), so the sum can be checked against its parts.
"""
from __future__ import annotations

from typing import Any

from ..studyfile.models import Workload
from ..record.fields import ADDS_UP
from ..record.parts import FanOut, ProcessRow
from .result import Interval, SideOutput, StreamResult, TestResult
from .streams import total, weighted_mean


# what adds up over processes (throughput, bytes, counts, the CPU of each process): the field table's `adds` rows
SUMMED = ADDS_UP


def split_streams(streams: int, processes: int) -> list[int]:
    """Streams per process: as even as possible, the first ones one more; never a process
    without a stream (at most `streams` processes)."""
    n = max(1, min(processes, streams))
    return [streams // n + (1 if i < streams % n else 0) for i in range(n)]


def process_workloads(wl: Workload, processes: int, port: int) -> list[Workload]:
    """The workload of each process: its share of the streams, its own port (port + i)."""
    return [wl.model_copy(update={"parallel": p, "port": port + i, "processes": 1})
            for i, p in enumerate(split_streams(int(wl.parallel), processes))]


def _side(s: SideOutput | None) -> dict[str, Any] | None:
    return None if s is None else s.model_dump()


def _sum(values: list[Any]) -> Any:
    return total(values)


def _sum_dicts(dicts: list[dict[str, float]]) -> dict[str, float]:
    keys = set().union(*dicts) if dicts else set()
    return {k: sum(d.get(k, 0.0) for d in dicts) for k in sorted(keys) if all(k in d for d in dicts)}


def per_process_row(i: int, wl: Workload, r: TestResult) -> ProcessRow:
    """What one process measured, kept with the summed result."""
    return ProcessRow(
        process=i, port=wl.port if isinstance(wl.port, int) else None, parallel=wl.parallel if isinstance(wl.parallel, int) else None, ok=r.ok, error=r.error,
        sender_bps=r.sender_bps, receiver_bps=r.receiver_bps, reverse_receiver_bps=r.reverse_receiver_bps,
        sender_bytes=r.sender_bytes, receiver_bytes=r.receiver_bytes, retransmits=r.retransmits,
        cpu_client=r.cpu_client, cpu_server=r.cpu_server, tool_cpu=dict(r.tool_cpu),
        streams=len(r.streams), client=_side(r.client), server=_side(r.server),
    )


def combine(engine: str, tool_version: str, wls: list[Workload], results: list[TestResult]) -> TestResult:
    """The sum of N processes' results of one test (see the module's docstring)."""
    first = results[0]
    out = TestResult(engine=engine, tool_version=first.tool_version or tool_version, protocol=first.protocol,
                     duration=max((r.duration for r in results if r.duration is not None), default=None))
    bad = [(i, r) for i, r in enumerate(results) if not r.ok]
    if bad:
        out.ok = False
        out.error = "; ".join(f"process {i + 1} of {len(results)} (port {wls[i].port}): {r.error}" for i, r in bad)
    dumps = [r.model_dump(include=set(SUMMED)) for r in results]
    for k in SUMMED:
        setattr(out, k, _sum([d[k] for d in dumps]))
    cw = [r.max_cwnd for r in results if r.max_cwnd]
    out.max_cwnd = max(cw) if cw else None
    wnd = [r.max_snd_wnd for r in results if r.max_snd_wnd]
    out.max_snd_wnd = max(wnd) if wnd else None
    rtt = [r for r in results if r.rtt_mean_us]
    out.rtt_mean_us = weighted_mean([(r.rtt_mean_us or 0.0, float(r.sender_bytes or 0)) for r in rtt])
    out.rtt_min_us = min((r.rtt_min_us for r in rtt if r.rtt_min_us is not None), default=None)
    out.rtt_max_us = max((r.rtt_max_us for r in rtt if r.rtt_max_us is not None), default=None)
    jit = [(r.jitter_ms, float(r.packets or 0)) for r in results if r.jitter_ms is not None]
    out.jitter_ms = weighted_mean([(j, w) for j, w in jit]) if jit else None
    if out.packets:
        out.lost_percent = 100.0 * (out.lost_packets or 0) / out.packets
    out.streams = _streams(results)
    out.intervals = _intervals(results)
    out.tool_cpu = _sum_dicts([r.tool_cpu for r in results])
    out.warnings = list(dict.fromkeys(w for r in results for w in r.warnings))
    out.client, out.server = first.client, first.server  # every process's sides are in per_process
    # the tool's own details (congestion control, buffers) and the other direction: the first process's
    out.reverse, out.details = first.reverse, dict(first.details)
    out.tool = first.tool.model_copy(update={"num_streams": _sum([r.tool.num_streams for r in results])})
    out.fanout = FanOut(processes=len(results), per_process=[per_process_row(i, w, r) for i, (w, r) in enumerate(zip(wls, results))])
    return out


def _renumbering(results: list[TestResult]) -> list[dict[int, int]]:
    """Per process: its stream ids -> the combined result's (1.. in process order: socket
    numbers repeat across processes)."""
    out: list[dict[int, int]] = []
    n = 0
    for r in results:
        ids: dict[int, int] = {}
        for s in r.streams:
            n += 1
            ids.setdefault(s.id, n)
        out.append(ids)
    return out


def _streams(results: list[TestResult]) -> list[StreamResult]:
    """Every process's streams, numbered 1.. in process order (socket numbers repeat
    across processes)."""
    out: list[StreamResult] = []
    for r in results:
        for s in r.streams:
            out.append(s.model_copy(update={"id": len(out) + 1}))
    return out


def _intervals(results: list[TestResult]) -> list[Interval]:
    """The n-th interval of each direction, summed over the processes that have it."""
    by_dir: dict[str, list[list[Interval]]] = {}
    for r, ids in zip(results, _renumbering(results)):
        for d in dict.fromkeys(iv.direction for iv in r.intervals):
            by_dir.setdefault(d, []).append([iv.model_copy(update={"streams": [st.model_copy(update={"id": ids.get(st.id, st.id)})
                                                                               for st in iv.streams]})
                                             for iv in r.intervals if iv.direction == d])
    out = []
    for d, lists in by_dir.items():
        for n in range(min(len(x) for x in lists)):
            ivs = [x[n] for x in lists]
            retr = [iv.retransmits for iv in ivs]
            cw = [iv.cwnd for iv in ivs if iv.cwnd]
            rtt = [(iv.rtt_us, iv.bps) for iv in ivs if iv.rtt_us]
            out.append(Interval(start=ivs[0].start, end=ivs[0].end, bps=sum(iv.bps for iv in ivs), direction=d,
                                retransmits=None if any(x is None for x in retr) else sum(x for x in retr if x is not None),
                                cwnd=max(cw) if cw else None, rtt_us=weighted_mean([(float(a), float(b)) for a, b in rtt]),
                                omitted=any(iv.omitted for iv in ivs), stream_bps=[b for iv in ivs for b in iv.stream_bps],
                                streams=[st for iv in ivs for st in iv.streams]))
    return out
