"""Arithmetic every engine's parser does on its streams: totals, byte-weighted means,
the per-direction cwnd/RTT aggregates, and the last line of a tool's output for an error.

One place, so iperf3, iperf2 and the next engine agree on what a "total" or a "mean
RTT" is (the same numbers from the same streams, whichever tool measured them).
"""
from __future__ import annotations

from typing import Any, Iterable

from .result import StreamResult, TestResult

SENT_SHORT = 0.95  # a sender that sent less than 95% of the rate asked of it: said in the warnings


def tail(text: str, n: int = 200) -> str:
    """The last non-blank line of a tool's output (at most `n` characters): what it said
    last is usually why it failed."""
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:n] if lines else ""


def weighted_mean(pairs: list[tuple[float, float]]) -> float | None:
    """Mean of values weighted by bytes (the RTT the average byte saw); a plain mean when
    no stream moved data; None without values."""
    if not pairs:
        return None
    w = sum(b for _, b in pairs)
    return sum(v * b for v, b in pairs) / w if w > 0 else sum(v for v, _ in pairs) / len(pairs)


def total(values: Iterable[float | int | None]) -> float | int | None:
    """Sum over streams, or None when any stream lacks the value (a partial sum would
    read as a lower throughput) or there are no streams."""
    vals = list(values)
    if not vals or any(v is None for v in vals):
        return None
    return sum(v for v in vals if v is not None)


def rtt_cwnd(streams: list[StreamResult]) -> dict[str, Any]:
    """max_cwnd, max_snd_wnd and rtt_mean/min/max_us of one direction's streams; the mean RTT is
    weighted by the bytes each stream sent. Streams without an RTT sample are left out
    (iperf3 reports 0 for "no sample"; iperf2's parser sets an RTT only from samples > 0)."""
    cw = [s.max_cwnd for s in streams if s.max_cwnd]
    wnd = [s.max_snd_wnd for s in streams if s.max_snd_wnd]
    rtt = [s for s in streams if s.rtt_mean_us]
    return {
        "max_cwnd": max(cw) if cw else None,
        "max_snd_wnd": max(wnd) if wnd else None,
        "rtt_mean_us": weighted_mean([(s.rtt_mean_us or 0.0, float(s.sender_bytes or 0)) for s in rtt]),
        "rtt_min_us": min((s.rtt_min_us for s in rtt if s.rtt_min_us is not None), default=None),
        "rtt_max_us": max((s.rtt_max_us for s in rtt if s.rtt_max_us is not None), default=None),
    }


def offered(res: TestResult, per_stream: float | None, streams: int) -> None:
    """Keep the rate the sender was asked for (`per_stream` bits/s over `streams`) and warn
    when it sent less than SENT_SHORT of it: then loss and jitter describe what was sent,
    not what was asked (a sender held back by its own host, e.g. a shaper on its own link)."""
    if not per_stream or per_stream <= 0 or streams < 1:
        return
    res.offered_bps = float(per_stream) * streams
    if res.sender_bps is not None and res.sender_bps < SENT_SHORT * res.offered_bps:
        res.warnings.append(f"the sender sent {rate_text(res.sender_bps)} of the {rate_text(res.offered_bps)} asked for "
                            f"({100 * res.sender_bps / res.offered_bps:.0f}%): its host held it back, so loss and jitter are "
                            "of what it sent, not of the rate asked for")


def rate_text(bps: float) -> str:
    for unit, power in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= power:
            return f"{bps / power:.3g} {unit}"
    return f"{bps:.3g} bit/s"
