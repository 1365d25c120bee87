"""A test pod's own CPU, from its cgroup, sampled like a machine's.

The kubernetes target lists each test pod in extra_machines as "pod:NAME" with this view
of it: its /proc/stat is made from the pod's cgroup (cpu.stat `usage_usec` on cgroup v2,
cpuacct.usage on v1) against wall-clock time on all of the node's cores, so the machine
CPU probe (probes/linux_cpu.py) records cpu_extra["pod:NAME"] = the pod's busy % of the
node's cores over the test, beside cpu_extra["node:NAME"] with node_access. Nothing else
is readable through it (a powercap read fails like on a host without RAPL).
"""
from __future__ import annotations

import re
import time
from typing import Any

from ..base import CommandResult, HostBase

CGROUP_V2 = "/sys/fs/cgroup/cpu.stat"
CGROUP_V1 = "/sys/fs/cgroup/cpuacct/cpuacct.usage"


class PodCgroupCpu(HostBase):
    def __init__(self, pod: Any):
        self.pod = pod
        self.name = f"pod:{pod.name}"
        self.address = pod.address
        self._ncpu: int | None = None

    def usage_usec(self) -> int:
        """CPU time the pod's cgroup used since it started, in microseconds."""
        try:
            m = re.search(r"^usage_usec (\d+)", self.pod.read_text(CGROUP_V2), re.M)
            if m:
                return int(m.group(1))
        except FileNotFoundError:
            pass
        return int(self.pod.read_text(CGROUP_V1).strip()) // 1000

    def read_text(self, path: str) -> str:
        if path != "/proc/stat":
            raise FileNotFoundError(f"{self.name}:{path}: only the pod's CPU is readable here")
        if self._ncpu is None:
            self._ncpu = sum(1 for ln in self.pod.read_text("/proc/stat").splitlines() if re.match(r"cpu\d", ln)) or 1
        used = self.usage_usec()
        wall = int(time.monotonic() * 1e6) * self._ncpu  # microseconds of all the node's cores
        lines = [f"cpu  {used} 0 0 {max(0, wall - used)} 0 0 0 0 0 0"] + [f"cpu{i} 0 0 0 0 0 0 0 0 0 0" for i in range(self._ncpu)]
        return "\n".join(lines) + "\n"

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        return CommandResult(list(argv), 1, "", f"{self.name}: only the pod's CPU is readable here")

    def reach(self) -> dict[str, Any]:
        return self.pod.reach()  # type: ignore[no-any-return]
