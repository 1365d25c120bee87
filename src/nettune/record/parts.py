"""The typed parts of a test's result, beside the field table's flat values.

Each is optional on `TestResult` (None: that kind of test does not have it) and read back
on `RunRecord` from the stored `extra_json` (store/records.py): pair and round, a command
workload's run, energy per machine and the meter, the other direction of a bidir test,
the tool's own details, a fanned-out test's processes, and engine = "auto"'s choice.
`TestResult.details` keeps only what no code reads (legacy.py puts the stored JSON
together in the shape older nettune versions wrote).
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .fields import CommandColumns, EnergyColumns, PairColumns


class PairPlace(PairColumns):
    """Where a test sat among the pairs of a point's run (run/slots.py)."""

    round_pairs: int | None = None  # how many pairs that round had
    parallel: bool | None = None  # whether the round's pairs ran at the same time


class StepSummary(BaseModel):
    """An untimed step of a command workload (setup, cleanup)."""

    model_config = ConfigDict(extra="allow")
    argv: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    timed_out: bool = False
    stderr_tail: list[str] = Field(default_factory=list)


class CommandRun(CommandColumns):
    """One run of a command workload: the table's values plus where and how it ended."""

    host: str | None = None
    timed_out: bool = False
    setup: StepSummary | None = None
    cleanup: StepSummary | None = None
    stderr_tail: list[str] | None = None  # last lines of stderr of a run that failed


class HostEnergy(BaseModel):
    """One machine's energy over the test (probes/powercap.py), or why it has none."""

    joules: dict[str, float] | None = None  # per powercap domain: package-0, dram...
    watts: float | None = None
    why: str | None = None


class MeterReading(BaseModel):
    """The external meter over the test (probes/power_command.py), or why it has none."""

    model_config = ConfigDict(extra="allow")
    watts: float | None = None
    joules: float | None = None
    min_w: float | None = None
    max_w: float | None = None
    samples: int | None = None  # readings dated inside the run's window
    seconds: float | None = None  # the window integrated over
    late: int | None = None  # readings dated after its end, left out
    too_short: str | None = None  # the window is shorter than a few meter intervals (probes/power_command.py)
    why: str | None = None


class EnergyRun(EnergyColumns):
    """Energy of every machine measured and the meter; the table's sums follow from them."""

    hosts: dict[str, HostEnergy] = Field(default_factory=dict)  # "machine", "hypervisor:NAME"
    meter: MeterReading | None = None

    def settle(self) -> "EnergyRun":
        """Recompute the table's values (energy_j, power_w, meter_j, meter_w, energy_why)
        from the machines and the meter; each probe calls it after writing its part."""
        measured = [h for h in self.hosts.values() if h.joules is not None]
        self.energy_j = round(sum(sum(h.joules.values()) for h in measured if h.joules), 6) if measured else None
        self.power_w = round(sum(float(h.watts or 0.0) for h in measured), 3) if measured else None
        m = self.meter or MeterReading()
        self.meter_j, self.meter_w = m.joules, m.watts
        why = [f"{k}: {h.why}" for k, h in self.hosts.items() if h.why] + ([f"meter: {m.why}"] if m.why else [])
        self.energy_why = "; ".join(why) or None
        self.energy_note = f"meter: {m.too_short}" if m.too_short else None
        return self


class ReverseDirection(BaseModel):
    """The server-to-client direction of a bidir test beyond the table's reverse rates:
    its bytes, UDP loss, TCP window and RTT, and the tool's counters."""

    model_config = ConfigDict(extra="allow")
    sender_bytes: int | None = None
    receiver_bytes: int | None = None
    jitter_ms: float | None = None
    lost_packets: int | None = None
    packets: int | None = None
    lost_percent: float | None = None
    max_cwnd: int | None = None
    max_snd_wnd: int | None = None
    rtt_mean_us: float | None = None
    rtt_min_us: float | None = None
    rtt_max_us: float | None = None
    write_count: int | None = None
    write_errors: int | None = None
    read_count: int | None = None
    udp_out_of_order: int | None = None


class ToolDetails(BaseModel):
    """What the tool said about the test beyond its numbers (stored flat in `extra`)."""

    num_streams: int | None = None  # streams the tool reported (iperf3 -P; a fan-out's sum)
    blksize: int | None = None
    sender_tcp_congestion: str | None = None
    receiver_tcp_congestion: str | None = None
    sndbuf_actual: int | None = None
    rcvbuf_actual: int | None = None
    tcp_mss_default: int | None = None
    measured_seconds: float | None = None  # the receiver's seconds of the end summary
    udp_out_of_order: int | None = None
    write_count: int | None = None  # iperf2 -e
    write_errors: int | None = None
    read_count: int | None = None
    unparsed_lines: dict[str, int] | None = None  # iperf2: lines of each side not read
    iperf3_cookie: str | None = None  # iperf3's own id of the test (start.cookie): the same test in two files is one test


class ProcessRow(BaseModel):
    """One process of a fanned-out test (engines/fanout.py): its share and its numbers."""

    model_config = ConfigDict(extra="allow")
    process: int
    port: int | None = None
    parallel: int | None = None
    ok: bool = True
    error: str | None = None
    sender_bps: float | None = None
    receiver_bps: float | None = None
    reverse_receiver_bps: float | None = None
    sender_bytes: int | None = None
    receiver_bytes: int | None = None
    retransmits: int | None = None
    cpu_client: float | None = None
    cpu_server: float | None = None
    tool_cpu: dict[str, float] = Field(default_factory=dict)
    streams: int = 0
    client: dict[str, Any] | None = None  # that process's client side (SideOutput dump)
    server: dict[str, Any] | None = None


class FanOut(BaseModel):
    """A test run as N tool processes at once (`[workload] processes`)."""

    processes: int
    per_process: list[ProcessRow] = Field(default_factory=list)


class EngineChoice(BaseModel):
    """What `engine = "auto"` picked for a point, and why (engines/choice.py)."""

    model_config = ConfigDict(extra="allow")
    engine: str
    processes: int = 1
    version: str | None = None
    reason: str = ""
    label: str = ""
