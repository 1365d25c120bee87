"""Idle power (`[probes] idle_power = SECONDS`): how many watts a machine draws doing
nothing, with a point's settings in force (study C: a tuned profile can make a machine
faster and idle 89 W higher; the lowest value over 2 minutes).

Once a second for SECONDS: the powercap counters of the host (watts over that second,
wrap-around included) and, when set, the external meter (`power_command`). Stored per
source: min and median watts, the number of samples, or why there were none.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

from .power_command import Sampler
from .powercap import EnergyWindow, joules, open_window, read_uj


def idle_power(host: Any, seconds: float, meter_argv: list[str] | None = None, interval: float = 1.0) -> dict[str, Any]:
    """Sample `host` idle for `seconds`; {"seconds", "powercap": {...}, "meter": {...}}."""
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
