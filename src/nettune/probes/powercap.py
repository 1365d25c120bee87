"""Energy from the kernel's powercap counters (RAPL): joules and average watts of a test.

Source of truth: kernel Documentation/power/powercap/powercap.rst. Each zone
/sys/class/powercap/intel-rapl:N (subzones intel-rapl:N:M) has `name` (package-N, psys,
core, uncore, dram), `energy_uj` (µJ, read by root only since the CVE-2020-8694 fix) and
`max_energy_range_uj`, where the counter wraps. AMD Zen uses the same driver (package-N
and core; no dram). Package and DRAM domains are kept: core and uncore lie inside their
package, and psys covers the whole platform (it is kept apart, never summed with them).
A host without readable counters gives nothing (an empty column, and the reason).
"""
from __future__ import annotations

import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from ..engines.result import TestResult
from ..record.parts import HostEnergy
from .base import ProbeBase

ROOT = "/sys/class/powercap/"
SUMMED = re.compile(r"^(package-\d+|dram)$")


@dataclass
class Zone:
    path: str  # /sys/class/powercap/intel-rapl:0
    name: str  # package-0
    max_uj: int


@dataclass
class EnergyWindow:
    """Counters at the start of a window; `joules()` at its end (wrap-around included)."""

    zones: list[Zone]
    start: dict[str, int] = field(default_factory=dict)
    t0: float = 0.0
    end: dict[str, int] = field(default_factory=dict)
    t1: float = 0.0


def zones(host: Any) -> tuple[list[Zone], str]:
    """The package and DRAM zones of a host, and why there are none when there are none."""
    r = host.run(["ls", ROOT], timeout=15)
    out = []
    for d in sorted(r.stdout.split()) if r.returncode == 0 else []:
        if d.startswith("intel-rapl-mmio"):
            continue  # the same package counter read through MMIO: counting it would double it
        try:
            name = host.read_text(f"{ROOT}{d}/name").strip()
            top = host.read_text(f"{ROOT}{d}/max_energy_range_uj").strip()
        except OSError:
            continue
        if SUMMED.match(name) and top.isdigit():
            out.append(Zone(f"{ROOT}{d}", name, int(top)))
    if out:
        return out, ""
    return [], "no powercap (RAPL) package zones on this host (a VM, or the intel_rapl driver not loaded)"


def read_uj(host: Any, zs: list[Zone]) -> dict[str, int] | None:
    """energy_uj of every zone, or None when one cannot be read (not root)."""
    out = {}
    for z in zs:
        try:
            out[z.path] = int(host.read_text(z.path + "/energy_uj").strip())
        except (OSError, ValueError):
            return None
    return out


def delta_uj(start: int, end: int, max_uj: int) -> int:
    """Microjoules between two readings of one counter that wraps at max_uj."""
    return end - start if end >= start else end + max_uj - start


def joules(w: EnergyWindow) -> dict[str, float]:
    """Joules per domain name over the window ({"package-0": 812.4, "dram": 40.1})."""
    out: dict[str, float] = {}
    for z in w.zones:
        if z.path in w.start and z.path in w.end:
            out[z.name] = out.get(z.name, 0.0) + delta_uj(w.start[z.path], w.end[z.path], z.max_uj) / 1e6
    return out


def open_window(host: Any) -> tuple[EnergyWindow | None, str]:
    zs, why = zones(host)
    if not zs:
        return None, why
    start = read_uj(host, zs)
    if start is None:
        return None, "powercap energy_uj is readable by root only (CVE-2020-8694): run as root or with sudo = true"
    return EnergyWindow(zs, start, time.monotonic()), ""


def close_window(host: Any, w: EnergyWindow) -> dict[str, float] | None:
    end = read_uj(host, w.zones)
    if end is None:
        return None
    w.end, w.t1 = end, time.monotonic()
    return joules(w)


class PowercapProbe(ProbeBase):
    """Joules per domain and average watts of one machine over the test window, written to
    the result's energy part: `energy.hosts[key]` = HostEnergy(joules={...}, watts=W) (key
    "machine" for the test machine, "hypervisor:NAME" for an extra one), or why it has none."""

    def __init__(self, host: Any, key: str = "machine"):
        self.host, self.key = host, key
        self.window: EnergyWindow | None = None
        self.why = ""
        self.measured: dict[str, float] | None = None

    def start(self) -> None:
        self.window, self.why = open_window(self.host)

    def stop(self) -> None:
        if self.window is not None:
            self.measured = close_window(self.host, self.window)
            if self.measured is None:
                self.why = "powercap energy_uj could not be read at the end of the test"

    def write(self, res: TestResult) -> None:
        energy = res.energy_part()
        w = self.window
        if self.measured is not None and w is not None and w.t1 > w.t0:
            energy.hosts[self.key] = HostEnergy(joules=self.measured, watts=round(sum(self.measured.values()) / (w.t1 - w.t0), 2))
        else:
            energy.hosts[self.key] = HostEnergy(why=self.why)
        energy.settle()


# -- idle power ([probes] idle_power = SECONDS) ---------------------------------------
# How many watts a machine draws doing nothing, with a point's settings in force (study C:
# a tuned profile can make a machine faster and idle 89 W higher; the lowest value over 2
# minutes). Once a second for SECONDS: the powercap counters of the host (watts over that
# second, wrap-around included) and, when set, the external meter (`power_command`).
# Stored per source: min and median watts, the number of samples, or why there were none.

def idle_power(host: Any, seconds: float, meter_argv: list[str] | None = None, interval: float = 1.0) -> dict[str, Any]:
    """Sample `host` idle for `seconds`; {"seconds", "powercap": {...}, "meter": {...}}."""
    from .power_command import Sampler  # noqa: PLC0415 - the meter's sampler, only when one is set

    meter = Sampler(meter_argv, interval) if meter_argv else None
    window, why = open_window(host)
    watts: list[float] = []
    if meter is not None:
        meter.start()
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            time.sleep(min(interval, max(0.0, end - time.monotonic())))
            if window is None:
                continue
            now, t = read_uj(host, window.zones), time.monotonic()
            if now is None:
                why, window = "powercap energy_uj could not be read during the idle window", None
                continue
            step = EnergyWindow(window.zones, window.start, window.t0, now, t)
            if t > window.t0:
                watts.append(sum(joules(step).values()) / (t - window.t0))
            window = EnergyWindow(window.zones, now, t)
    finally:
        if meter is not None:
            meter.stop()
    out: dict[str, Any] = {"seconds": seconds, "powercap": summary(watts, why)}
    if meter is not None:
        out["meter"] = summary(meter.watts, meter.why or "power_command gave no reading")
    return out


def summary(watts: list[float], why: str) -> dict[str, Any]:
    if not watts:
        return {"why": why or "no sample"}
    return {"min_w": round(min(watts), 3), "median_w": round(statistics.median(watts), 3), "samples": len(watts)}
