"""`engine = "auto"` and `processes = "auto"`: the configuration that measures the path, not
the tool, on the hosts at hand.

Pure rules over what the run found out (each tool's version on every host of the
workload, the cores the client may use (half the machine's when the server shares it), the stream count, and the loopback ceilings
`nettune ceiling` stored for the client's machine, if any); run/engine_choice.py asks
the hosts and applies the choice to every point. Each Choice says why, in words the run
prints and stores with every test.

The branches, in order:
1. loopback ceilings stored for the client's machine at this stream count (given only for
   a loopback path: a loopback ceiling predicts nothing about a lab's or a NIC's): the
   configuration that went fastest there (of those installed), when its runs show it
   faster than every other measured one (Welch, p < 0.05, two runs or more each); when
   they cannot tell it from another, the rules below decide among those within noise
   (and say so), never a "fastest" that is a coin toss;
2. iperf3 >= 3.16 (one thread per stream): iperf3, one process (more only past 128 streams);
3. a process count the study fixed: iperf3 over that many processes;
4. iperf3 before 3.16 with several streams on a machine of several cores (one process
   would run them all on one thread while cores sit idle): iperf2, which runs a thread
   per stream, when every host has it; else iperf3 fanned out over one process per core
   the client may use (at least two, at most one per stream);
5. iperf3 before 3.16, one stream or a one-core machine: iperf3 alone (one stream is one
   thread in any tool; one core is all any tool gets);
6. no usable iperf3: iperf2 (threaded: one thread per stream).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .iperf3 import MAX_STREAMS
from .iperf3_reader import version_tuple

THREADED_SINCE = (3, 16)  # iperf3 runs each stream in its own thread from 3.16


@dataclass(frozen=True)
class Choice:
    engine: str  # "iperf3" or "iperf2"
    processes: int
    reason: str
    version: str = ""

    @property
    def label(self) -> str:
        """e.g. "iperf3 3.12 x2 processes", "iperf2 2.1.8"."""
        name = f"{self.engine} {self.version}".strip()
        return name + (f" x{self.processes} processes" if self.processes > 1 else "")

    def to_dict(self) -> dict[str, object]:
        return {"engine": self.engine, "processes": self.processes, "version": self.version, "reason": self.reason, "label": self.label}


def threaded(version: str) -> bool:
    """True for an iperf3 that runs each stream in its own thread (3.16 and later)."""
    return version_tuple(version) >= THREADED_SINCE


def auto_processes(engine: str, version: str, streams: int, cores: int) -> int:
    """`processes = "auto"`: one per core the client may use, at most one per stream, 1 on
    iperf3 >= 3.16 and on iperf2 (both threaded); for iperf3, never fewer than its
    128-stream cap needs."""
    if engine != "iperf3":
        return 1
    need = math.ceil(streams / MAX_STREAMS)
    if threaded(version):
        return need
    return max(need, min(max(cores, 1), streams))


def config_label(engine: str, processes: int) -> str:
    """The key a ceiling is stored under: "iperf3", "iperf3 x4", "iperf2"."""
    return engine + (f" x{processes}" if processes > 1 else "")


def choose(streams: int, versions: dict[str, str], cores: int, ceilings: Mapping[str, Mapping[int, float | list[float]]] | None = None,
           processes: int | None = None, machine_cores: int | None = None) -> Choice:
    """The configuration for a test of `streams` streams. versions: engine -> version on
    every host of the workload ("" or absent: not usable there). cores: the cores the
    client may use (half the machine's when its server runs there too); machine_cores:
    the machine's (default: cores). ceilings: config label -> {streams: every run's bits/s}
    on the client's machine, for a loopback path only. processes: a number the study fixed for
    iperf3 (None: auto)."""
    v3, v2 = versions.get("iperf3", ""), versions.get("iperf2", "")
    if not v3 and not v2:
        raise ValueError("neither iperf3 nor iperf2 is installed on every host of the workload")
    machine = max(machine_cores or cores, cores)
    p3 = processes if processes is not None else auto_processes("iperf3", v3, streams, cores)
    candidates = ([("iperf3", 1), ("iperf3", max(p3, 2) if streams > 1 and not threaded(v3) else p3)] if v3 else []) + ([("iperf2", 1)] if v2 else [])
    measured = _from_ceilings(streams, candidates, ceilings or {})
    ruled = _by_rules(streams, v3, v2, cores, machine, p3, processes)
    if measured:
        best, at, seen, tied = measured
        shown = "; ".join(f"{config_label(*c)} {_mean(v) / 1e9:.1f} Gbit/s (N={len(v)})" for c, v in seen.items())
        if not tied:
            return Choice(best[0], best[1], f"fastest on this host's loopback ceiling at -P {at}: {shown}; shown faster than the "
                          "others (Welch, p < 0.05)", v3 if best[0] == "iperf3" else v2)
        near = {best, *tied}
        if (ruled.engine, ruled.processes) in near or (ruled.engine, ruled.processes) not in seen:
            return Choice(ruled.engine, ruled.processes, f"this host's loopback ceilings at -P {at} cannot tell "
                          f"{' and '.join(config_label(*c) for c in sorted(near))} apart ({shown}): by the rules, {ruled.reason}",
                          ruled.version)
        return Choice(best[0], best[1], f"fastest on this host's loopback ceiling at -P {at}: {shown}; within noise of "
                      f"{', '.join(config_label(*c) for c in tied)}", v3 if best[0] == "iperf3" else v2)
    return ruled


def _by_rules(streams: int, v3: str, v2: str, cores: int, machine: int, p3: int, processes: int | None) -> Choice:
    """Branches 2 to 6 of the module doc: the choice without ceilings."""
    if v3 and threaded(v3):
        why = f"iperf3 {v3} runs each stream in its own thread"
        if p3 > 1:
            why += f"; {p3} processes for {streams} streams (at most {MAX_STREAMS} per process)"
        return Choice("iperf3", p3, why, v3)
    if v3 and processes is not None:
        return Choice("iperf3", processes, f"iperf3 {v3}, {processes} process(es) as the study set", v3)
    if v3 and streams > 1 and machine > 1:
        bound = f"one iperf3 {v3} process runs all {streams} streams on one thread (before 3.16) and this machine has {machine} cores"
        if v2:
            return Choice("iperf2", 1, f"{bound}: iperf2 {v2} runs a thread per stream", v2)
        fan = max(2, min(max(cores, 1), streams))
        return Choice("iperf3", fan, f"{bound}: fanned out over {fan} processes (iperf2 is not on every host)", v3)
    if v3:
        why = "one stream is one thread in any tool" if streams <= 1 else "the machine has one core"
        return Choice("iperf3", 1, f"iperf3 {v3} single process: {why}", v3)
    return Choice("iperf2", 1, "iperf3 is not installed on every host; iperf2 runs each stream in its own thread", v2)


def _runs(v: float | list[float]) -> list[float]:
    return [float(x) for x in v] if isinstance(v, (list, tuple)) else [float(v)]


def _mean(v: list[float]) -> float:
    return sum(v) / len(v)


def _shown_slower(a: list[float], b: list[float]) -> bool:
    """a's runs are shown slower than b's (Welch, p < 0.05); never from fewer than two runs."""
    if len(a) < 2 or len(b) < 2 or _mean(a) >= _mean(b):
        return False
    from scipy import stats  # noqa: PLC0415 - only when ceilings are stored

    if len(set(a)) < 2 and len(set(b)) < 2:
        return True  # no spread on either side: the difference is all there is
    return bool(stats.ttest_ind(a, b, equal_var=False).pvalue < 0.05)


def _from_ceilings(streams: int, candidates: list[tuple[str, int]], ceilings: Mapping[str, Mapping[int, float | list[float]]]
                   ) -> tuple[tuple[str, int], int, dict[tuple[str, int], list[float]], list[tuple[str, int]]] | None:
    """(the candidate with the highest mean ceiling at the measured -P nearest `streams`
    (the largest measured one when `streams` is beyond them), that -P, each measured
    candidate's runs, those its runs do not show slower than the best), if at least two
    were measured at one -P."""
    found: dict[tuple[str, int], dict[int, list[float]]] = {}
    for cand in dict.fromkeys(candidates):
        by_p = ceilings.get(config_label(*cand)) or {}
        if by_p:
            found[cand] = {int(k): _runs(v) for k, v in by_p.items() if _runs(v)}
    ps = {p for by_p in found.values() for p in by_p}
    if not ps:
        return None
    at = min(ps, key=lambda p: (abs(p - streams), -p))
    seen = {c: by_p[at] for c, by_p in found.items() if at in by_p}
    if len(seen) < 2:
        return None
    best = max(seen, key=lambda c: _mean(seen[c]))
    tied = [c for c in seen if c != best and not _shown_slower(seen[c], seen[best])]
    return best, at, seen, tied
