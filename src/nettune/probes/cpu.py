"""CPU probes: per process from /proc/PID/stat, per machine from /proc/stat.

Process CPU is in % of one core (200% = two cores busy); machine CPU is in % of all
cores, with softirq (where bridging and packet processing show up) also reported alone.
Everything goes through Host.read_text so the same code samples a remote host.
"""
from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from typing import Any

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class MachineTimes:
    at: float
    total: int
    idle: int  # idle + iowait
    softirq: int
    ncpu: int


def read_machine(host: Any) -> MachineTimes | None:
    try:
        text = host.read_text("/proc/stat")
    except OSError:
        return None
    return parse_proc_stat(text, time.monotonic())


def parse_proc_stat(text: str, at: float) -> MachineTimes:
    lines = text.splitlines()
    f = [int(x) for x in lines[0].split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice; guest is inside user
    total = sum(f[:8])
    ncpu = sum(1 for ln in lines if ln.startswith("cpu") and ln[3:4].isdigit())
    return MachineTimes(at, total, f[3] + (f[4] if len(f) > 4 else 0), f[6] if len(f) > 6 else 0, ncpu)


def machine_percent(a: MachineTimes, b: MachineTimes) -> tuple[float, float]:
    """(busy %, softirq %) of all cores between two readings."""
    dt = b.total - a.total
    if dt <= 0:
        return 0.0, 0.0
    return 100.0 * (dt - (b.idle - a.idle)) / dt, 100.0 * (b.softirq - a.softirq) / dt


def read_process_ticks(host: Any, pid: int) -> int | None:
    """utime+stime of a process in clock ticks, or None if it is gone."""
    try:
        stat = host.read_text(f"/proc/{pid}/stat")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class ProcessCpu:
    """CPU % of one process over a window: exact from rusage when it is our child,
    else from /proc/PID/stat ticks sampled at the window's ends. Unknown (None, shown
    empty) when neither could be had, e.g. the connection to its host dropped: a 0 there
    would read as an idle process."""

    def __init__(self, host: Any, proc: Any):
        self.host, self.proc = host, proc
        start = read_process_ticks(host, proc.pid)
        self.start_ticks = start or 0
        self.last_ticks: int | None = None
        self._started = start is not None

    def sample(self) -> None:
        t = read_process_ticks(self.host, self.proc.pid)
        if t is not None:
            self.last_ticks = t

    def percent(self, seconds: float) -> float | None:
        if seconds <= 0 or getattr(self.proc, "lost", None):
            return None
        exact = getattr(self.proc, "cpu_seconds", lambda: None)()
        if exact is not None:
            used = exact - self.start_ticks / CLK_TCK
        elif self._started and self.last_ticks is not None:
            used = (self.last_ticks - self.start_ticks) / CLK_TCK
        else:
            return None
        return max(0.0, 100.0 * used / seconds)


class SelfCpu:
    """nettune's own CPU during a test, to prove the instrument stays out of the way."""

    def __init__(self) -> None:
        r = resource.getrusage(resource.RUSAGE_SELF)
        self.start = r.ru_utime + r.ru_stime
        self.t0 = time.monotonic()

    def percent(self) -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        dt = time.monotonic() - self.t0
        return 100.0 * (r.ru_utime + r.ru_stime - self.start) / dt if dt > 0 else 0.0
