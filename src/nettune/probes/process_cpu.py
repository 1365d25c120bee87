"""Process CPU: one side's iperf process (cpu_client, cpu_server), in % of one core
(200% = two cores busy), from the Proc's exact CPU time or /proc/PID/stat through the host."""
from __future__ import annotations

import os
import time

from ..engines.result import TestResult
from ..targets.base import Host, Proc
from .base import ProbeBase

CLK_TCK = os.sysconf("SC_CLK_TCK")


def read_process_ticks(host: Host, pid: int) -> int | None:
    """utime+stime of a process in clock ticks, or None if it is gone."""
    try:
        stat = host.read_text(f"/proc/{pid}/stat")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class ProcessCpu(ProbeBase):
    """CPU % of one side's process over the window (cpu_client or cpu_server): exact
    from the Proc's cpu_seconds() when its host reports it, else from /proc/PID/stat
    ticks sampled at the window's ends. Unknown (None, shown empty) when neither could
    be had, e.g. the connection to its host dropped: a 0 there would read as an idle
    process. `sample_end` False: the process has exited by stop() (the client), so only
    its exact CPU can tell."""

    def __init__(self, host: Host, proc: Proc, role: str, sample_end: bool = True):
        self.host, self.proc, self.role, self.sample_end = host, proc, role, sample_end
        self.start_ticks = 0
        self.last_ticks: int | None = None
        self._started = False
        self.t0 = self.t1 = 0.0

    def start(self) -> None:
        self.t0 = time.monotonic()
        start = read_process_ticks(self.host, self.proc.pid)
        self.start_ticks, self._started = start or 0, start is not None

    def stop(self) -> None:
        if self.sample_end:
            t = read_process_ticks(self.host, self.proc.pid)
            if t is not None:
                self.last_ticks = t
        self.t1 = time.monotonic()

    def percent(self, seconds: float) -> float | None:
        if seconds <= 0 or self.proc.lost:
            return None
        exact = self.proc.cpu_seconds()
        if exact is not None:
            used = exact - self.start_ticks / CLK_TCK
        elif self._started and self.last_ticks is not None:
            used = (self.last_ticks - self.start_ticks) / CLK_TCK
        else:
            return None
        return max(0.0, 100.0 * used / seconds)

    def write(self, res: TestResult) -> None:
        pct = self.percent(self.t1 - self.t0)
        if self.role == "client":
            res.cpu_client = pct
        else:
            res.cpu_server = pct
