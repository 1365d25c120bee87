"""What the benches share: the bare tools run as a person would type them, their numbers
read from the tools' own output (never through nettune's parsers), and ratios measured
side by side with an interval.

Ratios: each round gives one ratio (the two sides ran back to back in that round, their
order alternating); the summary is the geometric mean of the rounds' ratios with a 95%
Student-t interval on their logarithms. "within noise" = the interval contains 1.
"""
from __future__ import annotations

import json
import math
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from scipy import stats

_RATE = re.compile(r"([\d.]+)\s*([KMGT]?)bits/sec")
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_SPAN = re.compile(r"\]\s+([\d.]+)\s*-\s*([\d.]+)\s+sec")


def _bits(line: str) -> float | None:
    m = _RATE.search(line)
    return float(m.group(1)) * _SCALE[m.group(2)] if m else None


def iperf3_bps(out: str, streams: int) -> float | None:
    """Receiver bits/s of an iperf3 client's output: -J (end.sum_received) or text (the
    'receiver' line, [SUM] with several streams)."""
    if out.lstrip().startswith("{"):
        try:
            return float(json.loads(out)["end"]["sum_received"]["bits_per_second"])
        except (ValueError, KeyError, TypeError):
            return None
    lines = [ln for ln in out.splitlines() if ln.rstrip().endswith("receiver") and (streams == 1 or "[SUM]" in ln)]
    return _bits(lines[-1]) if lines else None


def iperf2_bps(out: str, duration: float) -> float | None:
    """The client's whole-test bits/s of an iperf2 text output (with or without -e, -i,
    -f b): its [SUM] line over the whole test, or with one stream the stream's line."""
    whole = [ln for ln in out.splitlines()
             if (span := _SPAN.search(ln)) and float(span.group(1)) <= 0.05 and float(span.group(2)) >= duration - 0.5]
    sums = [ln for ln in whole if "[SUM" in ln]
    pick = sums or [ln for ln in whole if "bits/sec" in ln]
    return _bits(pick[-1]) if pick else None

def wait_listening(host: Any, port: int, proto: str = "tcp", timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if host.listening(port, proto):
            return True
        time.sleep(0.01)
    return False


class Server:
    """A long-lived bare server (a person starts one and runs clients against it)."""

    def __init__(self, host: Any, argv: list[str], port: int):
        self.host, self.port = host, port
        self.proc = host.spawn(argv)
        if not wait_listening(host, port):
            self.proc.stop()
            raise RuntimeError(f"bare server {' '.join(argv)} did not listen")

    def stop(self) -> None:
        self.proc.stop()


def bare_client(client: Any, argv: list[str], duration: float) -> str:
    r = client.run(argv, timeout=duration + 40)
    return r.stdout


@dataclass
class Ratio:
    """Ratios of one comparison, round by round."""

    values: list[float] = field(default_factory=list)
    failed: int = 0

    def add(self, a: float | None, b: float | None) -> None:
        if a and b:
            self.values.append(a / b)
        else:
            self.failed += 1

    def summary(self) -> tuple[float | None, float | None, float | None]:
        """(geometric mean, 95% low, 95% high); the interval is None with fewer than 2."""
        if not self.values:
            return None, None, None
        logs = [math.log(v) for v in self.values]
        m = statistics.fmean(logs)
        if len(logs) < 2:
            return math.exp(m), None, None
        half = stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
        return math.exp(m), math.exp(m - half), math.exp(m + half)

    def text(self) -> str:
        g, lo, hi = self.summary()
        if g is None:
            return "failed"
        if lo is None:
            return f"{g:.3f} (one round: no interval)"
        verdict = "within noise" if lo <= 1 <= hi else ("faster" if lo > 1 else "SLOWER")
        fail = f", {self.failed} failed" if self.failed else ""
        return f"{g:.3f} [{lo:.3f}, {hi:.3f}] n={len(self.values)}{fail} {verdict}"

    def within_noise(self) -> bool:
        _, lo, hi = self.summary()
        return lo is not None and hi is not None and lo <= 1 <= hi
