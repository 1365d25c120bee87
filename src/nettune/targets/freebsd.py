"""FreeBSD hosts (over SSH): their facts.

Their machine CPU is read by its own probe (probes/freebsd_cpu.py, from kern.cp_time),
chosen because the host declares os = "freebsd".
"""
from __future__ import annotations

import re
from typing import Any


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
