"""Machine CPU, shared by its members (linux_cpu.py, freebsd_cpu.py): the counters, the
percentages between two readings, and the probe that samples them at the window's ends.

Machine CPU is in % of all cores, with softirq (where bridging and packet processing show
up) also reported alone. A member only says how its OS gives the counters (`read`), through
the Host protocol, so the same code samples a remote host.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..engines.result import TestResult
from ..targets.base import Host
from .base import ProbeBase


SERVER_MACHINE = "server"  # the key of the server's machine: cpu_server_host and its softirq part


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


class MachineCpu(ProbeBase):
    """Busy % of all cores of one host over the window. `key` None: the test's machine
    (cpu_host and cpu_host_softirq); SERVER_MACHINE: the server's machine when it is
    another one (cpu_server_host and its softirq part: in a VM most network work is
    softirq, not the server process); else cpu_extra[key] (busy % only), e.g.
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
        elif self.key == SERVER_MACHINE:
            res.cpu_server_host, res.cpu_server_host_softirq = busy, softirq
        else:
            res.cpu_extra[self.key] = busy
