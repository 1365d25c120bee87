"""FreeBSD machine CPU: kern.cp_time through the host (FreeBSD has no /proc/stat).

`sysctl -n kern.cp_time kern.cp_times` gives five tick counters (user nice sys intr
idle), for the machine and then per CPU; they map onto /proc/stat's user nice system
idle and irq fields, so one parser (probes.machine_cpu.parse_proc_stat) reads both systems and
the percentages are computed the same way. FreeBSD has no softirq counter: intr goes to
irq, softirq stays 0. Not verified on a real FreeBSD host here: the format is from
sysctl(8)/kern_clock.c.
"""
from __future__ import annotations

import time

from ..targets.base import Host
from .machine_cpu import MachineCpu, MachineTimes, parse_proc_stat


def cp_time_as_proc_stat(cp_time: str, cp_times: str = "") -> str:
    """'u n s i idle' (+ per-CPU groups of five) -> /proc/stat-like lines."""
    total = [int(x) for x in cp_time.split()[:5]]
    if len(total) != 5:
        raise OSError(f"unexpected kern.cp_time: {cp_time!r}")
    per = [int(x) for x in cp_times.split()]
    lines = [_line("cpu", total)]
    for i in range(len(per) // 5):
        lines.append(_line(f"cpu{i}", per[5 * i: 5 * i + 5]))
    return "\n".join(lines) + "\n"


def _line(name: str, f: list[int]) -> str:
    user, nice, sys_, intr, idle = f
    # user nice system idle iowait irq softirq steal
    return f"{name} {user} {nice} {sys_} {idle} 0 {intr} 0 0"


def read_cp_time(host: Host, at: float | None = None) -> MachineTimes:
    """The host's counters now (`at`: the reading's time, default now); OSError when
    sysctl fails."""
    r = host.run(["sysctl", "-n", "kern.cp_time", "kern.cp_times"], timeout=15)
    lines = r.stdout.splitlines()
    if r.returncode != 0 or not lines:
        raise OSError(f"{host.name}: sysctl kern.cp_time failed: {r.stderr.strip()}")
    text = cp_time_as_proc_stat(lines[0], lines[1] if len(lines) > 1 else "")
    return parse_proc_stat(text, time.monotonic() if at is None else at)


class CpTimeCpu(MachineCpu):
    """A FreeBSD machine: kern.cp_time."""

    def read(self) -> MachineTimes:
        return read_cp_time(self.host)
