"""The one result record every engine produces, whatever the tool."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class SideOutput(BaseModel):
    """One side of a test, kept verbatim: what ran, how it ended, what it printed."""

    role: str  # "client" or "server"
    host: str
    argv: list[str]
    exit_code: int | None = None
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    started: float | None = None  # unix time
    ended: float | None = None


class StreamResult(BaseModel):
    id: int
    direction: str = "forward"  # forward: client->server (or server->client with reverse); "reverse" = bidir's other way
    sender_bps: float | None = None
    receiver_bps: float | None = None
    sender_bytes: int | None = None
    receiver_bytes: int | None = None
    retransmits: int | None = None
    max_cwnd: int | None = None  # bytes
    rtt_mean_us: float | None = None
    rtt_min_us: float | None = None
    rtt_max_us: float | None = None
    jitter_ms: float | None = None
    lost_packets: int | None = None
    packets: int | None = None
    lost_percent: float | None = None


class Interval(BaseModel):
    start: float
    end: float
    bps: float
    direction: str = "forward"
    retransmits: int | None = None
    cwnd: int | None = None  # max over streams in the interval, bytes
    rtt_us: float | None = None
    omitted: bool = False
    stream_bps: list[float] = Field(default_factory=list)


class TestResult(BaseModel):
    engine: str
    tool_version: str = ""
    ok: bool = True
    error: str | None = None
    protocol: str = "tcp"
    duration: float | None = None
    # main direction (client->server; server->client with reverse)
    sender_bps: float | None = None
    receiver_bps: float | None = None
    sender_bytes: int | None = None
    receiver_bytes: int | None = None
    retransmits: int | None = None
    max_cwnd: int | None = None
    rtt_mean_us: float | None = None
    rtt_min_us: float | None = None
    rtt_max_us: float | None = None
    jitter_ms: float | None = None
    lost_packets: int | None = None
    packets: int | None = None
    lost_percent: float | None = None
    # the rate the main direction's sender was asked for (all its streams): -b times the
    # streams, or the tool's UDP default; None when nothing limited it (TCP without -b)
    offered_bps: float | None = None
    # the other direction of a bidirectional test
    reverse_sender_bps: float | None = None
    reverse_receiver_bps: float | None = None
    reverse_retransmits: int | None = None
    streams: list[StreamResult] = Field(default_factory=list)
    intervals: list[Interval] = Field(default_factory=list)
    # filled by probes (percent of one core for processes, of all cores for the host)
    cpu_client: float | None = None
    cpu_server: float | None = None
    cpu_host: float | None = None
    cpu_host_softirq: float | None = None
    cpu_extra: dict[str, float] = Field(default_factory=dict)  # other sampled hosts (e.g. hypervisor)
    tool_cpu: dict[str, float] = Field(default_factory=dict)  # what the tool itself reported
    warnings: list[str] = Field(default_factory=list)
    client: SideOutput | None = None
    server: SideOutput | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def total_bps(self) -> float | None:
        """Receiver throughput of both directions (just the main one unless bidir)."""
        return total_throughput(self.receiver_bps, self.reverse_receiver_bps)


# Where a test sat in a study over many host pairs (`[workload] pairs`): run.slots puts
# these in `extra` ("pair" = "server->client", "round" 0-based, "round_total_bps" the sum of
# a parallel round's ok pairs); the store keeps them as real columns of the same names.
PAIR_COLUMNS = ("pair", "server", "client", "round", "round_total_bps")


def pair_columns(extra: dict[str, Any]) -> dict[str, Any]:
    """The pair columns of a result, from its `extra` (None where the test ran no pair)."""
    out: dict[str, Any] = {k: extra.get(k) for k in PAIR_COLUMNS}
    for k in ("pair", "server", "client"):
        out[k] = None if out[k] is None else str(out[k])
    out["round"] = None if out["round"] is None else int(out["round"])
    out["round_total_bps"] = None if out["round_total_bps"] is None else float(out["round_total_bps"])
    return out


def total_throughput(receiver_bps: float | None, reverse_receiver_bps: float | None) -> float | None:
    """The one definition of a test's total throughput, for live results and stored runs
    alike: what the receiver got in the main direction plus, in a bidir test, what the
    other direction's receiver got. None when the main direction has no rate (a failure)."""
    if receiver_bps is None:
        return None
    return float(receiver_bps) + float(reverse_receiver_bps or 0.0)
