"""A container's CPU from its cgroup (a Kubernetes test pod): how busy it was over the
window, and how often its CPU limit throttled it.

cgroup v2 `cpu.stat` (/sys/fs/cgroup/cpu.stat inside the container) gives usage_usec and,
once a CPU limit is set, nr_periods, nr_throttled and throttled_usec; cgroup v1 gives
cpuacct.usage (ns) and cpu/cpu.stat's nr_periods, nr_throttled, throttled_time (ns). The
busy share is in % of the node's cores (the cpuN lines of the container's /proc/stat, which
are the node's unless lxcfs runs), as cpu_extra[key] like a machine's; the throttling over
the window goes to extra["cgroup_throttling"][key], and a window in which the container was
throttled gets a warning: its CPU limit, not the network, may have capped the test.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

from ..engines.result import TestResult
from ..targets.base import Host
from .machine_cpu import MachineCpu

V2 = "/sys/fs/cgroup/cpu.stat"
V1_USAGE = "/sys/fs/cgroup/cpuacct/cpuacct.usage"
V1_STAT = "/sys/fs/cgroup/cpu/cpu.stat"
THROTTLING = ("nr_periods", "nr_throttled", "throttled_usec")


@dataclass(frozen=True)
class CgroupTimes:
    at: float
    usage_usec: int
    throttling: dict[str, int]  # THROTTLING counters the cgroup has ({} without a CPU limit)


def parse_cpu_stat(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"^(\w+) (\d+)$", text, re.M)}


class CgroupCpu(MachineCpu):
    """cpu_extra[key]: the container's busy % of the node's cores; extra["cgroup_throttling"][key]."""

    def __init__(self, host: Host, key: str | None = None):
        super().__init__(host, key)
        self.ncpu: int | None = None
        self.first_c: CgroupTimes | None = None
        self.last_c: CgroupTimes | None = None

    def read_cgroup(self) -> CgroupTimes:
        t0 = time.monotonic()
        try:
            stat = parse_cpu_stat(self.host.read_text(V2))
            usage = stat["usage_usec"]
        except (FileNotFoundError, KeyError):  # cgroup v1
            usage = int(self.host.read_text(V1_USAGE).strip()) // 1000
            try:
                stat = parse_cpu_stat(self.host.read_text(V1_STAT))
            except FileNotFoundError:
                stat = {}
            if "throttled_time" in stat:
                stat["throttled_usec"] = stat["throttled_time"] // 1000
        # the counters were read between t0 and now (an exec round trip): the middle is when
        return CgroupTimes((t0 + time.monotonic()) / 2, usage, {k: stat[k] for k in THROTTLING if k in stat})

    def _sample_cgroup(self) -> CgroupTimes | None:
        try:
            if self.ncpu is None:
                self.ncpu = sum(1 for ln in self.host.read_text("/proc/stat").splitlines() if re.match(r"cpu\d", ln)) or 1
            return self.read_cgroup()
        except (OSError, ValueError):  # ConnectionError included: an empty column, never a 0
            return None

    def start(self) -> None:
        self.first_c = self._sample_cgroup()

    def stop(self) -> None:
        self.last_c = self._sample_cgroup()

    def write(self, res: TestResult) -> None:
        a, b = self.first_c, self.last_c
        if a is None or b is None or b.at <= a.at or self.ncpu is None:
            return
        # a busy node can read a hair over 100 %: the two readings' times are known to an exec's round trip
        busy = min(100.0, 100.0 * (b.usage_usec - a.usage_usec) / ((b.at - a.at) * 1e6 * self.ncpu))
        key = self.key or "cgroup"
        if self.key is None:
            res.cpu_host = busy
        else:
            res.cpu_extra[key] = busy
        if not a.throttling or set(a.throttling) != set(b.throttling):
            return
        delta = {k: b.throttling[k] - a.throttling[k] for k in THROTTLING if k in a.throttling}
        res.details.setdefault("cgroup_throttling", {})[key] = delta  # stored in the extra JSON; no code reads it back
        if delta.get("nr_throttled", 0) > 0:
            res.warnings.append(f"{key} was CPU-throttled in {delta['nr_throttled']} of {delta.get('nr_periods', '?')} periods "
                                f"({delta.get('throttled_usec', 0) / 1e6:.3f} s) during the test: its CPU limit may have capped it "
                                "(raise [target] cpu)")
