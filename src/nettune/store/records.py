"""The stored test as readers get it: `Store.runs` returns one `RunRecord` per row of
`runs`, its JSON columns decoded, with the values derived from them (total throughput,
the main direction's streams) computed here and nowhere else.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field, fields
from typing import Any

from ..engines.result import total_throughput


@dataclass
class RunRecord:
    """One stored test: its slot (study, point, run number), what ran, its metrics (bits/s,
    bytes, %, as in `engines.result.TestResult`), and its series as stored JSON."""

    id: int
    study_id: int
    point_id: int
    run: int
    warmup: bool
    ok: bool
    error: str | None
    engine: str
    tool_version: str | None
    protocol: str | None
    started: float | None
    duration: float | None
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
    reverse_sender_bps: float | None = None
    reverse_receiver_bps: float | None = None
    reverse_retransmits: int | None = None
    cpu_client: float | None = None
    cpu_server: float | None = None
    cpu_host: float | None = None
    cpu_host_softirq: float | None = None
    cpu_extra: dict[str, float] = field(default_factory=dict)
    tool_cpu: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    streams: list[dict[str, Any]] = field(default_factory=list)  # StreamResult dumps (None fields left out)
    intervals: list[dict[str, Any]] = field(default_factory=list)  # Interval dumps
    settings: dict[str, Any] = field(default_factory=dict)  # target state and knob values in force
    extra: dict[str, Any] = field(default_factory=dict)
    # where the test sat in a study over host pairs (None for a single-pair study)
    pair: str | None = None  # "server->client"
    server: str | None = None
    client: str | None = None
    round: int | None = None  # 0-based round within its point's run
    round_total_bps: float | None = None  # a parallel round: the sum of its ok pairs' throughput
    # schema 4 (store/workload_columns.py): a command workload's measurements, every test's energy
    wall_s: float | None = None
    cpu_s: float | None = None
    cpu_user_s: float | None = None
    cpu_sys_s: float | None = None
    peak_rss_kb: int | None = None
    exit_code: int | None = None
    energy_j: float | None = None
    power_w: float | None = None
    meter_j: float | None = None
    meter_w: float | None = None
    energy_why: str | None = None
    cpu_units: dict[str, str] = field(default_factory=dict)  # unit of each CPU figure (store/cpu_units.py)
    point_idx: int = 0
    point: dict[str, Any] = field(default_factory=dict)  # the sweep parameters of this test
    study: str = ""  # the study's name

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "RunRecord":
        """A row of `SELECT r.*, p.idx AS point_idx, p.params_json, s.name AS study`."""
        d = dict(row)
        d["point"] = json.loads(d.pop("params_json"))
        for k in [k for k in d if k.endswith("_json")]:
            d[k.removesuffix("_json")] = json.loads(d.pop(k))
        d["ok"], d["warmup"] = bool(d["ok"]), bool(d["warmup"])
        return cls(**d)

    # -- derived values -------------------------------------------------------------
    @property
    def total_bps(self) -> float | None:
        """Receiver throughput of both directions (engines.result.total_throughput)."""
        return total_throughput(self.receiver_bps, self.reverse_receiver_bps)

    @property
    def forward_streams(self) -> list[dict[str, Any]]:
        """The streams of the main direction (a bidir test also has 'reverse' ones)."""
        return [s for s in self.streams if s.get("direction", "forward") == "forward"]

    # -- plain forms ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The stored columns as a plain dict (what Store.runs returned before records)."""
        return {f.name: self.__dict__[f.name] for f in fields(self)}

    def __getitem__(self, key: str) -> Any:
        """Read access by column name, so notebooks and scripts written against the plain
        dicts (`run["receiver_bps"]`, `run["point"]["queues"]`) keep working."""
        if key not in _FIELDS:
            raise KeyError(key)
        return self.__dict__[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.__dict__[key] if key in _FIELDS else default


_FIELDS = frozenset(f.name for f in fields(RunRecord))
