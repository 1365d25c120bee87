"""Host facts collected once per study, through the Host protocol (works remotely too)."""
from __future__ import annotations

import re
from typing import Any


def linux_facts(host: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {"os": "linux"}
    r = host.run(["uname", "-srm"])
    facts["kernel"] = r.stdout.strip()
    try:
        cpuinfo = host.read_text("/proc/cpuinfo")
        models = re.findall(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
        facts["cpu_model"] = models[0].strip() if models else ""
        facts["cpu_count"] = len(re.findall(r"^processor\s*:", cpuinfo, re.M))
    except OSError:
        pass
    try:
        mem = host.read_text("/proc/meminfo")
        m = re.search(r"MemTotal:\s+(\d+) kB", mem)
        if m:
            facts["mem_gib"] = round(int(m.group(1)) / 1024**2, 1)
    except OSError:
        pass
    for tool, argv in (("iperf3", ["iperf3", "--version"]), ("iperf2", ["iperf", "-v"])):
        r = host.run(argv, timeout=10)
        text = (r.stdout + r.stderr).strip()
        m = re.search(r"iperf(?: version)? (\d+\.\d+(?:\.\d+)?\S*)", text)
        facts[f"{tool}_version"] = m.group(1) if (m and r.returncode in (0, 1)) else None
    try:
        facts["tcp_congestion_control"] = host.read_text("/proc/sys/net/ipv4/tcp_congestion_control").strip()
    except OSError:
        pass
    return facts
