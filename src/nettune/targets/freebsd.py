"""FreeBSD hosts (over SSH): facts, and machine CPU from kern.cp_time.

FreeBSD has no /proc/stat. SshHost.read_text("/proc/stat") on a FreeBSD host returns
the text `cp_time_as_proc_stat` builds from `sysctl -n kern.cp_time kern.cp_times`, so
probes.cpu.read_machine works unchanged. kern.cp_time is five tick counters
(user nice sys intr idle); they map to /proc/stat's user nice system idle and irq.
Not verified on a real FreeBSD host here: the format is from sysctl(8)/kern_clock.c.
"""
from __future__ import annotations

import re
from typing import Any


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


def freebsd_facts(host: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {"os": "freebsd"}
    facts["kernel"] = host.run(["uname", "-srm"]).stdout.strip()
    r = host.run(["sysctl", "-n", "hw.model", "hw.ncpu", "hw.physmem"])
    vals = r.stdout.splitlines()
    if r.returncode == 0 and len(vals) >= 3:
        facts["cpu_model"] = vals[0].strip()
        facts["cpu_count"] = int(vals[1]) if vals[1].strip().isdigit() else None
        facts["mem_gib"] = round(int(vals[2]) / 1024**3, 1) if vals[2].strip().isdigit() else None
    for tool, argv in (("iperf3", ["iperf3", "--version"]), ("iperf2", ["iperf", "-v"])):
        r = host.run(argv, timeout=10)
        m = re.search(r"iperf(?: version)? (\d+\.\d+(?:\.\d+)?\S*)", r.stdout + r.stderr)
        facts[f"{tool}_version"] = m.group(1) if (m and r.returncode in (0, 1)) else None
    r = host.run(["sysctl", "-n", "net.inet.tcp.cc.algorithm", "kern.ipc.maxsockbuf"])
    vals = r.stdout.split()
    if r.returncode == 0 and len(vals) >= 2:
        facts["tcp_congestion_control"], facts["maxsockbuf"] = vals[0], vals[1]
    return facts
