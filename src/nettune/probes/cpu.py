"""CPU probes: per process from /proc/PID/stat, per Linux machine from /proc/stat, and
nettune's own CPU.

Process CPU is in % of one core (200% = two cores busy); machine CPU is in % of all
cores, with softirq (where bridging and packet processing show up) also reported alone.
Everything goes through Host.read_text so the same code samples a remote host.
"""
from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass

from ..engines.result import TestResult
from ..targets.base import Host, Proc

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class MachineTimes:
    at: float
    total: int
    idle: int  # idle + iowait
    softirq: int
    ncpu: int


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


class MachineCpu:
    """Busy % of all cores of one host over the window. `key` None: the test's machine
    (cpu_host and cpu_host_softirq); else cpu_extra[key] (busy % only), e.g.
    "hypervisor:pve". A member says how its OS gives the counters (`read`)."""

    def __init__(self, host: Host, key: str | None = None):
        self.host, self.key = host, key
        self.first: MachineTimes | None = None
        self.last: MachineTimes | None = None

    def read(self) -> MachineTimes:
        """The host's CPU counters now; OSError when they cannot be read."""
        raise NotImplementedError

    def _sample(self) -> MachineTimes | None:
        try:
            return self.read()
        except OSError:  # ConnectionError included: a lost host gives an empty column
            return None

    def start(self) -> None:
        self.first = self._sample()

    def stop(self) -> None:
        self.last = self._sample()

    def write(self, res: TestResult) -> None:
        if self.first is None or self.last is None:
            return
        busy, softirq = machine_percent(self.first, self.last)
        if self.key is None:
            res.cpu_host, res.cpu_host_softirq = busy, softirq
        else:
            res.cpu_extra[self.key] = busy


class ProcStatCpu(MachineCpu):
    """A Linux machine: /proc/stat."""

    def read(self) -> MachineTimes:
        return parse_proc_stat(self.host.read_text("/proc/stat"), time.monotonic())


def read_process_ticks(host: Host, pid: int) -> int | None:
    """utime+stime of a process in clock ticks, or None if it is gone."""
    try:
        stat = host.read_text(f"/proc/{pid}/stat")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class ProcessCpu:
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


class SelfCpu:
    """nettune's own CPU during a test (cpu_extra["nettune"]), to prove the instrument
    stays out of the way."""

    def __init__(self) -> None:
        self.start_cpu = 0.0
        self.t0 = 0.0
        self.pct = 0.0

    @staticmethod
    def _cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    def start(self) -> None:
        self.start_cpu, self.t0 = self._cpu(), time.monotonic()

    def stop(self) -> None:
        dt = time.monotonic() - self.t0
        self.pct = 100.0 * (self._cpu() - self.start_cpu) / dt if dt > 0 else 0.0

    def write(self, res: TestResult) -> None:
        res.cpu_extra["nettune"] = self.pct
