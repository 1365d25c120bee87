"""The one result record every engine produces, whatever the tool."""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping

from pydantic import BaseModel, Field, model_validator

from ..record.fields import Measures
from ..record.legacy import PARTS, join, split
from ..record.parts import CommandRun, EngineChoice, EnergyRun, FanOut, PairPlace, ReverseDirection, ToolDetails


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
    max_snd_wnd: int | None = None  # bytes (iperf3 3.12+: the sender's largest send window)
    rtt_mean_us: float | None = None
    rtt_min_us: float | None = None
    rtt_max_us: float | None = None
    jitter_ms: float | None = None
    lost_packets: int | None = None
    packets: int | None = None
    lost_percent: float | None = None


class IntervalStream(BaseModel):
    """One stream over one interval: joins `StreamResult.id` of the same direction. The
    sender-side TCP values come from the side that sends (the server's with -R)."""

    id: int
    bps: float
    bytes: int | None = None
    retransmits: int | None = None
    cwnd: int | None = None  # snd_cwnd, bytes
    snd_wnd: int | None = None  # bytes
    rtt_us: float | None = None
    rttvar_us: float | None = None
    pmtu: int | None = None
    omitted: bool = False


class Interval(BaseModel):
    start: float
    end: float
    bps: float
    direction: str = "forward"
    retransmits: int | None = None
    cwnd: int | None = None  # max over streams in the interval, bytes
    rtt_us: float | None = None
    omitted: bool = False
    stream_bps: list[float] = Field(default_factory=list)  # per stream, in `streams` order (kept for older readers)
    streams: list[IntervalStream] = Field(default_factory=list)  # per stream, with its id


class TestResult(Measures):
    """One test as an engine (and the probes, and the run layer) leave it.

    The flat values are the field table's `Measures` (record/fields.py); the rest are typed
    parts, None where this kind of test has none. `details` keeps what no code reads;
    `extra` is the JSON shape the store keeps (record/legacy.py), read-only. A result built
    with `extra={...}` (older scripts, stored rows) has it split into the parts.

    nettune's own pydantic model: values in the field table's units (bits/s, bytes, us,
    %), `streams` and `intervals` its series. Example::

        r = nettune.TestResult(engine="iperf3", ok=True, receiver_bps=9.41e9, sender_bps=9.43e9)
        r.total_bps, r.model_dump(exclude_none=True)
    """

    engine: str
    tool_version: str = ""
    ok: bool = True
    error: str | None = None
    protocol: str = "tcp"
    streams: list[StreamResult] = Field(default_factory=list)
    intervals: list[Interval] = Field(default_factory=list)
    cpu_extra: dict[str, float] = Field(default_factory=dict)  # other sampled hosts (e.g. hypervisor)
    tool_cpu: dict[str, float] = Field(default_factory=dict)  # what the tool itself reported
    cpu_units: dict[str, str] = Field(default_factory=dict)  # declared units of its CPU figures (an import's)
    warnings: list[str] = Field(default_factory=list)
    client: SideOutput | None = None
    server: SideOutput | None = None
    pair: PairPlace | None = None  # [workload] pairs: which pair, which round
    command: CommandRun | None = None  # engine = "command"
    energy: EnergyRun | None = None  # the energy probes
    reverse: ReverseDirection | None = None  # a bidir test's other direction, beyond the table's rates
    tool: ToolDetails = Field(default_factory=ToolDetails)
    fanout: FanOut | None = None  # [workload] processes > 1
    engine_choice: EngineChoice | None = None  # engine = "auto"
    details: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _split_extra(cls, data: Any) -> Any:
        if isinstance(data, dict) and "extra" in data:
            data = dict(data)
            data = split(data.pop("extra") or {}) | data
        return data

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> "TestResult":
        """A copy; `update={"extra": {...}}` (older scripts) replaces every part, as it replaced
        the whole `extra` dict before the parts existed."""
        if update and "extra" in update:
            rest = {k: v for k, v in update.items() if k != "extra"}
            update = {k: None for k in PARTS} | {"tool": ToolDetails(), "cpu_units": {}} | split(dict(update["extra"] or {})) | rest
        return super().model_copy(update=update, deep=deep)

    @property
    def extra(self) -> Mapping[str, Any]:
        """The stored `extra` JSON of this result (parts and details), read-only."""
        return MappingProxyType(join({k: self.__dict__[k] for k in PARTS}, self.details))

    def energy_part(self) -> EnergyRun:
        """The energy part, created empty when the first probe writes to it."""
        if self.energy is None:
            self.energy = EnergyRun()
        return self.energy
