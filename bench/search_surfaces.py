"""Synthetic response surfaces for bench/search: each a grid (the sweep's lists), a true
mean per configuration, a noise level (lognormal: every measurement is the true mean times
exp(N(-s^2/2, s^2)), s from the coefficient of variation) and the [search] options it is
searched with (objective direction, constraints). They copy the shapes the studies met
(../shared/studies.md): a -P curve that declines after its peak, queues x streams with an
interaction, socket buffers on a log scale with a cliff, MTU that matters only at high
rates, plateaus where many configurations tie, needles, two peaks, a constraint boundary,
an efficiency objective (per CPU) and a time to minimise."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

P = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 18, 20, 24, 28, 32, 40, 48, 56, 64]
Q = [1, 2, 4, 8]
S = [1, 2, 4, 8, 16, 32]
MTU = [1500, 4000, 9000]
BUF = [65536, 131072, 262144, 524288, 1048576, 2097152, 4194304, 8388608, 16777216]
G = 1e9


@dataclass(frozen=True)
class Surface:
    name: str
    sweep: dict[str, list[Any]]
    f: Callable[[dict[str, Any]], dict[str, float]]
    cv: float = 0.05
    search: dict[str, Any] = field(default_factory=dict)  # extra [search] keys (objective, per, constraints)
    params: dict[str, dict[str, Any]] = field(default_factory=dict)  # [search.params.X]

    @property
    def points(self) -> int:
        return math.prod(len(v) for v in self.sweep.values())

    @property
    def one_d(self) -> bool:
        return len(self.sweep) == 1


def _l2(x: float) -> float:
    return math.log2(x)


def p_peak(peak: float, fall: float, rise: float = 0.006, top: float = 288.0) -> Callable[[dict[str, Any]], dict[str, float]]:
    def f(v: dict[str, Any]) -> dict[str, float]:
        p = v["p"]
        y = top * (1 - rise * (p - peak) ** 2) if p <= peak else top * max(0.25, 1 - fall * (p - peak))
        return {"total": max(1.0, y) * G, "cpu_host": 5.0 + 3 * p}
    return f


def saturating(v: dict[str, Any]) -> dict[str, float]:
    return {"total": 100 * G * (1 - math.exp(-v["p"] / 6)), "cpu_host": 5.0 + 2 * v["p"]}


def bimodal(v: dict[str, Any]) -> dict[str, float]:
    p = v["p"]
    return {"total": G * (60 + 30 * math.exp(-((p - 4) / 1.5) ** 2) + 45 * math.exp(-((p - 28) / 6) ** 2)), "cpu_host": 5.0 + p}


def interaction(v: dict[str, Any]) -> dict[str, float]:
    # study A: the best streams grow with the queues (each queue wants about 2 streams)
    q, s = v["queues"], v["streams"]
    y = 20 * q ** 0.7 * min(1.0, s / (2 * q)) * (1 - 0.05 * abs(_l2(s) - _l2(2 * q)))
    return {"total": y * G, "cpu_host": 10.0 * q + s}


def bowl4(v: dict[str, Any]) -> dict[str, float]:
    q, s, m, b = v["queues"], v["streams"], v["mtu"], v["buf"]
    y = 100 - 6 * (_l2(q) - 2) ** 2 - 4 * (_l2(s) - 3) ** 2 - 8 * ((m - 9000) / 7500) ** 2 - 3 * (_l2(b) - 22) ** 2
    return {"total": max(5.0, y) * G, "cpu_host": 20.0 + 5 * q}


def dominant(v: dict[str, Any]) -> dict[str, float]:
    y = 10 * min(v["buf"], 4194304) / 4194304 * 10 + 0.3 * _l2(v["streams"]) + 0.1 * v["queues"]
    return {"total": y * G, "cpu_host": 10.0}


def plateau(v: dict[str, Any]) -> dict[str, float]:
    q, s, b = v["queues"], v["streams"], v["buf"]
    y = 80 * min(1.0, q * s / 8) * min(1.0, b / 1048576)
    return {"total": max(2.0, y) * G, "cpu_host": 4.0 * q + s}


def needle(v: dict[str, Any]) -> dict[str, float]:
    q, s, m = v["queues"], v["streams"], v["mtu"]
    y = 50 + 5 * _l2(s) / 5 + (8 if (q == 4 and s == 8 and m == 9000) else 0)
    return {"total": y * G, "cpu_host": 10.0}


def capped(v: dict[str, Any]) -> dict[str, float]:
    # more streams, more throughput, more CPU: the constraint cuts the fastest off
    q, s = v["queues"], v["streams"]
    return {"total": 15 * G * q ** 0.5 * _l2(1 + s), "cpu_host": 6.0 * s + 8 * q}


def capped_buf(v: dict[str, Any]) -> dict[str, float]:
    s, b = v["streams"], v["buf"]
    return {"total": G * (30 * _l2(1 + s) + 4 * (_l2(b) - 16)), "retransmits": 40.0 * s * (b / 65536) ** 0.5, "cpu_host": 10.0}


def cc_buf(v: dict[str, Any]) -> dict[str, float]:
    # bbr wins only with big buffers; cubic is steady
    b = _l2(v["buf"]) - 16
    y = (40 + 7 * b) if v["cc"] == "bbr" else (55 + 2 * b)
    return {"total": y * G * (1 + 0.02 * _l2(v["streams"])), "cpu_host": 10.0}


def ridge(v: dict[str, Any]) -> dict[str, float]:
    q, s = _l2(v["queues"]), _l2(v["streams"])
    y = 100 - 12 * (s - q - 1.5) ** 2 - 2 * (q - 2) ** 2
    return {"total": max(5.0, y) * G, "cpu_host": 10.0}


def buf_cliff(v: dict[str, Any]) -> dict[str, float]:
    b = _l2(v["buf"])
    y = 20 + 70 / (1 + math.exp(-(b - 19.5) * 2)) - (35 if b >= 23.5 else 0)
    return {"total": y * G * (1 + 0.03 * _l2(v["streams"])), "cpu_host": 10.0}


def mtu_high_rate(v: dict[str, Any]) -> dict[str, float]:
    s, m = v["streams"], v["mtu"]
    rate = 10 * _l2(1 + s) * v["queues"] ** 0.3
    gain = 1 + (0.25 if m == 9000 else 0.1 if m == 4000 else 0) * min(1.0, rate / 40)
    return {"total": rate * gain * G, "cpu_host": 10.0}


def two_peaks(v: dict[str, Any]) -> dict[str, float]:
    q, s = _l2(v["queues"]), _l2(v["streams"])
    y = 60 * math.exp(-((q - 0) ** 2 + (s - 1) ** 2) / 2) + 75 * math.exp(-((q - 3) ** 2 + (s - 4.5) ** 2) / 1.5) + 10
    return {"total": y * G, "cpu_host": 10.0}


def efficiency(v: dict[str, Any]) -> dict[str, float]:
    # throughput saturates, CPU keeps climbing: the best per core is at few streams
    s, q = v["streams"], v["queues"]
    return {"total": G * 80 * (1 - math.exp(-s * q / 6)), "cpu_host": 8.0 + 6.0 * s + 2 * q}


def build_time(v: dict[str, Any]) -> dict[str, float]:
    # study C: wall seconds of a build over jobs; too many jobs thrash
    j, g = v["jobs"], v["governor"]
    t = 600 / min(j, 16) + 4 * max(0, j - 16) + 30
    return {"wall": t * (0.92 if g == "performance" else 1.0)}


def deceptive(v: dict[str, Any]) -> dict[str, float]:
    q, s = v["queues"], v["streams"]
    y = 70 - 3 * _l2(s) + (35 if (q >= 4 and s >= 16) else 0)
    return {"total": y * G, "cpu_host": 10.0}


def cliff3(v: dict[str, Any]) -> dict[str, float]:
    s, b, m = v["streams"], v["buf"], v["mtu"]
    y = 30 * _l2(1 + s) * (0.5 if b > 4194304 else 1.0) * (1.1 if m > 1500 else 1.0) * min(1.0, b / 524288)
    return {"total": max(2.0, y) * G, "cpu_host": 10.0}


SURFACES: list[Surface] = [
    Surface("P peak at 10, steep fall", {"p": P}, p_peak(10, 0.03)),
    Surface("P peak at 24, slow fall", {"p": P}, p_peak(24, 0.01, rise=0.0015)),
    Surface("P narrow peak at 6", {"p": P}, p_peak(6, 0.06, rise=0.02)),
    Surface("P saturating (plateau)", {"p": P}, saturating),
    Surface("P two peaks (the far one higher)", {"p": P}, bimodal),
    Surface("P peak at 10, noisy (cv 10%)", {"p": P}, p_peak(10, 0.03), cv=0.10),
    Surface("queues x streams interaction", {"queues": Q + [16], "streams": S + [64, 128]}, interaction),
    Surface("4-D bowl (queues, streams, MTU, buffer)", {"queues": Q, "streams": S, "mtu": MTU, "buf": BUF}, bowl4),
    Surface("4-D, the buffer dominates", {"queues": Q, "streams": S, "mtu": MTU, "buf": BUF}, dominant),
    Surface("plateau: many tie at the top", {"queues": Q, "streams": S, "buf": BUF}, plateau),
    Surface("needle: one point 10% better", {"queues": Q, "streams": S, "mtu": MTU}, needle, cv=0.03),
    Surface("constraint: cpu_host <= 60", {"queues": Q, "streams": S + [64]}, capped, search={"constraints": ["cpu_host <= 60"]}),
    Surface("constraint: retransmits <= 400", {"streams": S, "buf": BUF}, capped_buf, search={"constraints": ["retransmits <= 400"]}),
    Surface("cc (categorical) x buffer", {"cc": ["cubic", "bbr"], "buf": BUF, "streams": S}, cc_buf),
    Surface("ridge: streams must follow queues", {"queues": Q + [16, 32], "streams": S + [64, 128, 256]}, ridge),
    Surface("buffer cliff (too large drops)", {"buf": BUF + [33554432], "streams": S}, buf_cliff),
    Surface("MTU matters only at high rates", {"queues": Q, "streams": S, "mtu": MTU}, mtu_high_rate),
    Surface("two peaks in 2-D", {"queues": Q + [16], "streams": S + [64]}, two_peaks),
    Surface("efficiency: total per cpu_host", {"queues": Q, "streams": S + [64]}, efficiency, search={"per": "cpu_host"}),
    Surface("build time (lower is better)", {"jobs": [1, 2, 4, 6, 8, 12, 16, 20, 24, 32, 48, 64], "governor": ["schedutil", "performance"]},
            build_time, search={"objective": "wall"}),
    Surface("deceptive: small values look good", {"queues": Q + [16], "streams": S + [64]}, deceptive),
    Surface("3-D cliff (buffer too large halves it)", {"streams": S, "buf": BUF, "mtu": MTU}, cliff3),
]
