"""The field table: every value a test stores, one row each, and everything else derived
from it (the store's columns and insert, `RunRecord`, the export and import columns, the
analysis metrics and the `--metric` choices with their help).

A row is a field of one of the column groups below, annotated with its `Row`: the Python
type is the annotation, the SQL type follows from it, and the row says the rest (stored
unit, the label and scale tables and charts show, which way is better, the `--metric`
name, which engines or probes fill it, whether exports carry it). `TestResult` inherits
`Measures` (the network and CPU values, filled by the engine parsers and the probes) and
holds the other groups as typed parts (`result.pair`, `result.command`, `result.energy`);
`RunRecord` inherits every group flat, one attribute per column.

Derived rows (`DERIVED`) are computed from other fields (total throughput, retransmits
per GB): a property of `Measures`, exported and offered as metrics, never stored.

Adding a metric is one row here plus the parser that fills it (docs/architecture.md, "How
to add a metric"): the column appears in new and upgraded databases, in `RunRecord`, in
`results` and `export` (and `import` reads it back), and `--metric NAME` takes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from types import UnionType
from typing import Annotated, Any, Callable, Literal, Union, get_args, get_origin

from pydantic import BaseModel

Better = Literal["higher", "lower"] | None
FAST = ("faster", "slower")  # throughput and time: verdict words
GOOD = ("better", "worse")
IPERF = ("iperf3", "iperf2")
IPERF3 = ("iperf3",)
COMMAND = ("command",)
PROBES = ("probes",)  # every test: nettune's CPU and energy probes
PAIRS = ("pairs",)  # `[workload] pairs`: run/slots.py


@dataclass(frozen=True)
class Row:
    """One field's description (its name and type are the annotated field's)."""

    unit: str  # the stored unit: bit/s, bytes, count, us, ms, %, s, KiB, J, W ('' for text)
    label: str  # header and axis label, in the displayed unit ("receiver Gbit/s")
    scale: float = 1.0  # stored value * scale = displayed value
    better: Better = None  # which way is better (None: neither, not a metric)
    metric: str | None = None  # the `--metric` name (None: not offered)
    words: tuple[str, str] = GOOD  # verdict words for better / worse
    by: tuple[str, ...] = IPERF  # what fills it: engines, "probes", "pairs"
    exported: bool = True  # results and export carry it (and import reads it back)
    adds: bool = False  # adds up over the processes of one fanned-out test (engines/fanout.py)
    doc: str = ""  # its meaning, for docs/results.md and `--metric` help
    since: int = 1  # the fields version (store/columns.py) whose exports first carried it: import needs those of 1


SQL = {int: "INTEGER", float: "REAL", str: "TEXT", bool: "INTEGER"}


@dataclass(frozen=True)
class Field:
    """A row bound to its field: what every consumer reads."""

    name: str
    type: type  # int, float or str (the value is that or None)
    group: str  # measures, command, energy, pair
    part: str | None  # the TestResult part holding it (None: TestResult itself)
    row: Row
    derive: Callable[[Any], Any] | None = None  # a derived field's formula (never stored)

    @property
    def sql(self) -> str:
        return SQL[self.type]

    @property
    def stored(self) -> bool:
        return self.derive is None

    def of(self, record: Any) -> Any:
        """The value on a RunRecord (or any object with the field flat)."""
        return self.derive(record) if self.derive is not None else attrgetter(self.name)(record)

    def of_result(self, result: Any) -> Any:
        """The value on a TestResult: its own field, or its part's (None without that part)."""
        if self.part is None:
            return self.of(result)
        part = attrgetter(self.part)(result)
        return None if part is None else attrgetter(self.name)(part)

    def cast(self, value: Any) -> Any:
        """A value read back (an export cell, a JSON number) as this field's type; None stays."""
        if value is None:
            return None
        if self.type is int:
            return int(value)
        return float(value) if self.type is float else str(value)


# -- the column groups ------------------------------------------------------------------
# name: Annotated[type | None, Row(unit, label, scale, better, metric, words, by, ...)] = None

class Measures(BaseModel):
    """A test's network and CPU values: fields of `TestResult` and `RunRecord` alike."""

    duration: Annotated[float | None, Row("s", "seconds", 1.0, "lower", "duration", FAST, IPERF + COMMAND,
                                          doc="length of the test: iperf's -t, or a command's wall seconds")] = None
    sender_bps: Annotated[float | None, Row("bit/s", "sender Gbit/s", 1e-9, "higher", "sender", FAST, adds=True,
                                            doc="bits/s sent in the main direction")] = None
    receiver_bps: Annotated[float | None, Row("bit/s", "receiver Gbit/s", 1e-9, "higher", "receiver", FAST, adds=True,
                                              doc="bits/s received in the main direction")] = None
    sender_bytes: Annotated[int | None, Row("bytes", "sender bytes", adds=True, doc="bytes sent")] = None
    receiver_bytes: Annotated[int | None, Row("bytes", "receiver bytes", adds=True, doc="bytes received")] = None
    retransmits: Annotated[int | None, Row("count", "retransmits", 1.0, "lower", "retransmits", adds=True,
                                           doc="TCP retransmits of the sender (iperf3; iperf2 -e)")] = None
    max_cwnd: Annotated[int | None, Row("bytes", "max cwnd bytes", 1.0, "higher", "max_cwnd",
                                        doc="largest congestion window of the sender's streams")] = None
    max_snd_wnd: Annotated[int | None, Row("bytes", "max send window bytes", 1.0, "higher", "max_snd_wnd", by=IPERF3,
                                           since=2, doc="largest send window the sender saw (the receiver's advertised window: "
                                               "far below max_cwnd means the receiver's buffer limited the test); iperf3 3.12+")] = None
    rtt_mean_us: Annotated[float | None, Row("us", "RTT us", 1.0, "lower", "rtt_mean_us", doc="sender's smoothed RTT, mean")] = None
    rtt_min_us: Annotated[float | None, Row("us", "min RTT us", 1.0, "lower", "rtt_min_us", doc="sender's smoothed RTT, lowest")] = None
    rtt_max_us: Annotated[float | None, Row("us", "max RTT us", 1.0, "lower", "rtt_max_us", doc="sender's smoothed RTT, highest")] = None
    jitter_ms: Annotated[float | None, Row("ms", "jitter ms", 1.0, "lower", "jitter_ms", doc="UDP receiver's jitter")] = None
    lost_packets: Annotated[int | None, Row("count", "lost packets", adds=True, doc="UDP datagrams lost")] = None
    packets: Annotated[int | None, Row("count", "packets", adds=True, doc="UDP datagrams sent")] = None
    lost_percent: Annotated[float | None, Row("%", "loss %", 1.0, "lower", "lost_percent", doc="UDP datagrams lost, %")] = None
    offered_bps: Annotated[float | None, Row("bit/s", "offered Gbit/s", 1e-9, adds=True, since=4,
                                             doc="the rate the main direction's sender was asked for, all its streams (-b times "
                                                 "the streams, or the tool's UDP default); none when nothing limited it (TCP "
                                                 "without -b). A sender below 95% of it is warned")] = None
    reverse_sender_bps: Annotated[float | None, Row("bit/s", "reverse sender Gbit/s", 1e-9, adds=True,
                                                    doc="bits/s sent server to client in a bidir test")] = None
    reverse_receiver_bps: Annotated[float | None, Row("bit/s", "reverse Gbit/s", 1e-9, "higher", "reverse", FAST, adds=True,
                                                      doc="bits/s received server to client in a bidir test")] = None
    reverse_retransmits: Annotated[int | None, Row("count", "reverse retransmits", adds=True,
                                                   doc="TCP retransmits server to client in a bidir test")] = None
    cpu_client: Annotated[float | None, Row("%", "client CPU %", 1.0, "lower", "cpu_client", by=PROBES, adds=True,
                                            doc="the client process, % of one core (unless cpu_units says otherwise)")] = None
    cpu_server: Annotated[float | None, Row("%", "server CPU %", 1.0, "lower", "cpu_server", by=PROBES, adds=True,
                                            doc="the server process, % of one core (unless cpu_units says otherwise)")] = None
    cpu_host: Annotated[float | None, Row("%", "host CPU %", 1.0, "lower", "cpu_host", by=PROBES,
                                          doc="the test's machine (the client's), % of all cores")] = None
    cpu_host_softirq: Annotated[float | None, Row("%", "host softirq %", 1.0, "lower", "cpu_host_softirq", by=PROBES,
                                                  doc="the machine's softirq part, % of all cores")] = None
    cpu_server_host: Annotated[float | None, Row("%", "server machine CPU %", 1.0, "lower", "cpu_server_host", by=PROBES, since=3,
                                                 doc="the server's machine when it is another one than cpu_host's (a VM, a remote "
                                                     "host), % of all its cores")] = None
    cpu_server_host_softirq: Annotated[float | None, Row("%", "server machine softirq %", 1.0, "lower", "cpu_server_host_softirq",
                                                         by=PROBES, since=3, doc="that machine's softirq part, % of all its cores")] = None

    @property
    def total_bps(self) -> float | None:
        """Receiver throughput of both directions (just the main one unless bidir)."""
        return total_throughput(self.receiver_bps, self.reverse_receiver_bps, self.reverse_sender_bps)

    @property
    def retrans_per_gb(self) -> float | None:
        """TCP retransmits per GB (1e9 bytes) sent in the main direction: comparable across
        tests of different lengths and rates, unlike the raw count."""
        if self.retransmits is None or not self.sender_bytes:
            return None
        return self.retransmits / (self.sender_bytes / 1e9)


class PairColumns(BaseModel):
    """Where a test sat in a study over host pairs (`[workload] pairs`); None elsewhere."""

    pair: Annotated[str | None, Row("", "pair", by=PAIRS, doc="`server->client` of a study with `[workload] pairs`")] = None
    server: Annotated[str | None, Row("", "server", by=PAIRS, doc="the pair's server host")] = None
    client: Annotated[str | None, Row("", "client", by=PAIRS, doc="the pair's client host")] = None
    round: Annotated[int | None, Row("", "round", by=PAIRS, doc="the pair's round within its point's run, 0-based")] = None
    round_total_bps: Annotated[float | None, Row("bit/s", "round Gbit/s", 1e-9, by=PAIRS,
                                                 doc="a parallel round: the sum of its ok pairs' total_bps")] = None


class CommandColumns(BaseModel):
    """A command workload's measurements (`engine = "command"`, run/command_driver.py)."""

    wall_s: Annotated[float | None, Row("s", "seconds", 1.0, "lower", "wall", FAST, COMMAND,
                                        since=2, doc="wall seconds of `run` (none when it timed out)")] = None
    cpu_s: Annotated[float | None, Row("s", "CPU seconds", 1.0, "lower", "cpu_s", by=COMMAND,
                                       since=2, doc="user + system CPU seconds of its process tree")] = None
    cpu_user_s: Annotated[float | None, Row("s", "user CPU seconds", 1.0, "lower", "cpu_user_s", by=COMMAND, since=2, doc="user part")] = None
    cpu_sys_s: Annotated[float | None, Row("s", "system CPU seconds", 1.0, "lower", "cpu_sys_s", by=COMMAND, since=2, doc="system part")] = None
    peak_rss_kb: Annotated[int | None, Row("KiB", "peak RSS MiB", 1 / 1024, "lower", "peak_rss", by=COMMAND,
                                           since=2, doc="peak resident set of the largest process of its tree, nettune's own size "
                                           "never in it (how: peak_rss_method)")] = None
    peak_rss_method: Annotated[str | None, Row("", "peak RSS method", by=COMMAND, since=5,
                                               doc="how peak_rss_kb was measured: `rusage-time` (GNU time under a small helper, from about "
                                               "1 MiB up), `rusage-helper` (the helper's own wait4, from about 6 MiB up), or `not measured: "
                                               "<why>`; docs/workloads.md")] = None
    exit_code: Annotated[int | None, Row("", "exit code", by=COMMAND, since=2, doc="the run's exit status")] = None


class EnergyColumns(BaseModel):
    """Energy over the test, every test (probes/powercap.py, probes/power_command.py)."""

    energy_j: Annotated[float | None, Row("J", "RAPL joules per run", 1.0, "lower", "energy", by=PROBES,
                                          since=2, doc="RAPL package + DRAM joules, summed over the machines measured")] = None
    power_w: Annotated[float | None, Row("W", "RAPL average W", 1.0, "lower", "power", by=PROBES,
                                         since=2, doc="average watts over the test, the same machines")] = None
    meter_j: Annotated[float | None, Row("J", "meter joules per run", 1.0, "lower", "meter_j", by=PROBES,
                                         since=2, doc="joules from the external meter (`[probes] power_command`), integrated over the run's own window")] = None
    meter_w: Annotated[float | None, Row("W", "meter average W", 1.0, "lower", "meter_w", by=PROBES, since=2,
                                         doc="the meter's average watts over the run: meter_j / the run's seconds")] = None
    energy_why: Annotated[str | None, Row("", "why no energy", by=PROBES, since=2, doc="why a machine or the meter has no energy")] = None
    energy_note: Annotated[str | None, Row("", "energy note", by=PROBES, since=5,
                                           doc="a caveat on the energy that was measured: a run too short to meter")] = None


class IdleColumns(BaseModel):
    """One idle-power window of a point (`[probes] idle_power`): the `idle_power` table."""

    host: Annotated[str, Row("", "host", by=PROBES, doc="`machine` (the test machine) or a host name")] = ""
    source: Annotated[str, Row("", "source", by=PROBES, doc="`powercap` or `meter`")] = ""
    seconds: Annotated[float, Row("s", "idle seconds", by=PROBES, doc="length of the window")] = 0.0
    min_w: Annotated[float | None, Row("W", "idle W (lowest)", by=PROBES, doc="lowest watts over the window")] = None
    median_w: Annotated[float | None, Row("W", "idle W (median)", by=PROBES, doc="median watts over the window")] = None
    samples: Annotated[int | None, Row("count", "samples", by=PROBES, doc="readings taken")] = None
    why: Annotated[str | None, Row("", "why no sample", by=PROBES, doc="no sample: the reason")] = None


def total_throughput(receiver_bps: float | None, reverse_receiver_bps: float | None,
                     reverse_sender_bps: float | None = None) -> float | None:
    """The one definition of a test's total throughput, for live results and stored runs
    alike: what the receiver got in the main direction plus, in a bidir test, what the
    other direction's receiver got. None when the main direction has no rate (a failure),
    and when the other direction ran (its sender's rate is known) but what arrived there is
    not (a server's log of a bidir test): the main direction alone would be too low."""
    if receiver_bps is None or reverse_receiver_bps is None and reverse_sender_bps is not None:
        return None
    return float(receiver_bps) + float(reverse_receiver_bps or 0.0)


# derived rows: name -> (row, the field it follows in the table)
DERIVED: dict[str, tuple[Row, str]] = {
    "total_bps": (Row("bit/s", "Gbit/s", 1e-9, "higher", "total", FAST,
                      doc="receiver bits/s of both directions (the main one plus a bidir test's reverse)"), "receiver_bps"),
    "retrans_per_gb": (Row("count/GB", "retransmits per GB", 1.0, "lower", "retrans_per_gb", since=2,
                           doc="TCP retransmits per GB (1e9 bytes) sent in the main direction"), "retransmits"),
}


def _plain(annotation: Any) -> type:
    """int, float or str from `X | None` (or X)."""
    args = [a for a in get_args(annotation) if a is not type(None)] if get_origin(annotation) in (Union, UnionType) else [annotation]
    return args[0] if args and args[0] in SQL else str


def _bind(model: type[BaseModel], group: str, part: str | None) -> list[Field]:
    out = []
    for name, info in model.model_fields.items():
        rows = [m for m in info.metadata if isinstance(m, Row)]
        if rows:
            out.append(Field(name, _plain(info.annotation), group, part, rows[0]))
        if name in {after for _, after in DERIVED.values()}:
            out += [Field(d, float, group, None, row, attrgetter(d)) for d, (row, after) in DERIVED.items() if after == name]
    return out


# The table, in the order exports write it.
FIELDS: dict[str, Field] = {f.name: f for f in [
    *_bind(Measures, "measures", None), *_bind(CommandColumns, "command", "command"),
    *_bind(EnergyColumns, "energy", "energy"), *_bind(PairColumns, "pair", "pair"),
]}
IDLE_FIELDS: dict[str, Field] = {f.name: f for f in _bind(IdleColumns, "idle", None)}

STORED = [f for f in FIELDS.values() if f.stored]  # the columns of `runs` the table defines
EXPORTED = [f for f in FIELDS.values() if f.row.exported]
METRIC_FIELDS = {f.row.metric: f for f in FIELDS.values() if f.row.metric and f.row.better}
ADDS_UP = tuple(f.name for f in FIELDS.values() if f.row.adds and f.part is None)


def group(name: str) -> list[Field]:
    return [f for f in FIELDS.values() if f.group == name]


def metric_help() -> str:
    """The `--metric` choices as help text: name (label), from the table."""
    return ", ".join(f"{m} ({f.row.label})" for m, f in METRIC_FIELDS.items())
