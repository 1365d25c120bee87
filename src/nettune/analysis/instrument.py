"""Study D: when the measuring tool, not the path, set the number.

Three verdicts:
- tool-bound: iperf3 before 3.16 runs every stream of a process on one thread; a process
  at >= 90% of one core measured itself, unless it already had every core the client may
  use (then no configuration of any tool gets more of that machine). With fan-out
  (`processes`), each process's CPU is judged on its own (the run's `fanout` part), never
  their sum;
- near the ceiling: a point within 10% of the loopback ceiling `nettune ceiling` measured
  on its client's machine for the same configuration (engine, processes) at the nearest
  stream count: the instrument, not the path, is the limit there;
- engine = "auto": which configuration was picked, and why (stored with every test).
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Any
from ..store.records import RunRecord
from .data import METRICS, StudyData
from .stats import summarize

TOOL_SATURATED = 90.0  # % of one core: a single-threaded tool is pegged
ONE_THREAD_BEFORE = (3, 16)  # iperf3 versions before this run every stream of a process on one thread
NEAR_CEILING = 0.90  # a result at >= 90% of the loopback ceiling is the instrument's limit


def _version(text: str | None) -> tuple[int, int] | None:
    mt = re.search(r"(\d+)\.(\d+)", text or "")
    return (int(mt.group(1)), int(mt.group(2))) if mt else None


def processes(r: RunRecord) -> int:
    return r.processes


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


def tool_bound_points(data: StudyData, params: list[str]) -> tuple[str, dict[str, list[tuple[str, float]]], list[int]]:
    """(iperf3 version, side -> [(point label, %)], indices of the tool-bound points)."""
    hits: dict[str, list[tuple[str, float]]] = defaultdict(list)
    version, idx = "", []
    cores = data.host_cores()
    for p in data.points:
        for r in p.counted:
            found = run_tool_bound(r, cores)
            if found:
                version = r.tool_version or version
                idx += [p.idx] if p.idx not in idx else []
            for side, val in found.items():
                hits[side].append((p.label(params), val))
    return version, hits, idx


def tool_bound(data: StudyData) -> dict[str, float]:
    """Side -> the highest CPU % of a pegged single-threaded iperf3 (empty: not tool-bound)."""
    return {side: max(v for _, v in seen) for side, seen in tool_bound_points(data, data.params)[1].items()}


def instrument(data: StudyData, params: list[str]) -> list[str]:
    """Every instrument finding: what engine = "auto" picked, tool-bound points, points
    near their host's loopback ceiling."""
    out = choice_findings(data, params)
    version, hits, _ = tool_bound_points(data, params)
    for side, seen in hits.items():
        pts = list(dict.fromkeys(lbl for lbl, _ in seen))
        top = max(v for _, v in seen)
        out.append(f"the tool was the bottleneck: iperf3 {version} runs every stream of a process on one thread (before 3.16) and its "
                   f"{side} process used up to {top:.0f}% of one core at {len(pts)} point(s) ({'; '.join(pts[:3])}"
                   f"{'...' if len(pts) > 3 else ''}): those numbers measure iperf3, not the network; use processes = \"auto\", "
                   "engine = \"auto\" (or iperf2, or iperf3 >= 3.16), or `nettune run --cross-check`")
    out += [f"cross-check at {c['label']}: {c['verdict']}" for c in data.study.get("cross_checks") or []]
    return out + ceiling_findings(data, params)


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


def _client_host(data: StudyData, r: RunRecord) -> str | None:
    if r.client is not None:  # a study over host pairs: this test's client
        return r.client
    wl = data.spec().get("workload") or {}
    return wl.get("client") if isinstance(wl.get("client"), str) else None


def ceiling_of(data: StudyData, r: RunRecord) -> tuple[str, int, float, str] | None:
    """(config, -P, bits/s, machine) of the loopback ceiling that applies to run `r`."""
    host = _client_host(data, r)
    facts = data.facts.get(host or "") or {}
    table = facts.get("loopback_ceiling")
    if not isinstance(table, dict):
        return None
    config = r.engine + (f" x{processes(r)}" if processes(r) > 1 else "")
    by_p = {int(k): float(v) for k, v in (table.get(config) or {}).items()}
    if not by_p:
        return None
    streams = r.n_streams or 1
    at = min(by_p, key=lambda p: (abs(p - streams), -p))
    return config, at, by_p[at], str(facts.get("machine") or host)


def best_near_ceiling(data: StudyData, point_idx: int) -> list[str]:
    """The headline's line when the best point is within 10% of its loopback ceiling."""
    pts = [p for p in data.points if p.idx == point_idx]
    found = ceiling_findings(data, data.params, pts)
    return [f"limit: the instrument, not the path: {found[0]}"] if found else []


def ceiling_findings(data: StudyData, params: list[str], points: list[Any] | None = None) -> list[str]:
    out = []
    total = METRICS["total"]
    for p in data.points if points is None else points:
        runs = p.counted
        mean = summarize(p.values(total)).mean
        c = ceiling_of(data, runs[0]) if runs else None
        if mean is None or c is None:
            continue
        config, at, ceil, machine = c
        if mean >= NEAR_CEILING * ceil:
            where = f"at {p.label(params)}: " if params else ""
            out.append(f"{where}{mean / 1e9:.1f} Gbit/s is {mean / ceil * 100:.0f}% of {machine}'s loopback ceiling for {config} at "
                       f"-P {at} ({ceil / 1e9:.1f} Gbit/s): the instrument, not the path, is the limit here")
    return out


__all__ = ["instrument", "tool_bound", "tool_bound_points", "run_tool_bound", "ceiling_findings"]
