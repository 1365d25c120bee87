"""A test pod's own CPU, from its cgroup, sampled during every test.

The kubernetes target lists each test pod in extra_machines as "pod:NAME" with this view
of it: a host whose CPU counters are a cgroup's (cpu_counters = "cgroup"), so the probe
registry samples it with probes/cgroup_cpu.py: cpu_extra["pod:NAME"] = the pod's busy %
of the node's cores over the test, and how often its CPU limit throttled it
(extra["cgroup_throttling"]["pod:NAME"]), beside cpu_extra["node:NAME"] with node_access.
Only the pod's /proc/stat and its cgroup files are readable through it (a powercap read
fails like on a host without RAPL).
"""
from __future__ import annotations

from typing import Any

from ..base import CommandResult, HostBase


class PodCgroupCpu(HostBase):
    cpu_counters = "cgroup"

    def __init__(self, pod: Any):
        self.pod = pod
        self.name = f"pod:{pod.name}"
        self.address = pod.address

    def read_text(self, path: str) -> str:
        if path != "/proc/stat" and not path.startswith("/sys/fs/cgroup/"):
            raise FileNotFoundError(f"{self.name}:{path}: only the pod's CPU is readable here")
        return self.pod.read_text(path)  # type: ignore[no-any-return]

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        return CommandResult(list(argv), 1, "", f"{self.name}: only the pod's CPU is readable here")

    def reach(self) -> dict[str, Any]:
        return self.pod.reach()  # type: ignore[no-any-return]
