"""The measurements a results table's columns can be mapped to (`--columns NAME=METRIC`).

`table_metrics()` is the one place that knows which run fields exist: today it lists the
numeric measurement fields of a stored run (store.records.RunRecord: rates, bytes,
retransmits, RTT, jitter, loss, CPU, the test's duration, a command workload's wall and
CPU seconds and peak RSS, the external meter's joules and watts) by their own names and
units, plus the names with a unit in them that tables used before (receiver_gbps,
rtt_ms, ...). When the project has one table of fields, this function is what to point
at it; nothing else in the importers names a field.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..engines.result import TestResult
from ..store.records import RunRecord

# RunRecord fields that are not a measurement of the test (its place, its bookkeeping),
# or that cannot be given alone (energy_j and power_w are computed together, per host)
NOT_MEASURED = {"id", "study_id", "point_id", "point_idx", "run", "started", "round", "round_total_bps", "exit_code", "energy_j", "power_w"}
COMMAND = ("wall_s", "cpu_s", "cpu_user_s", "cpu_sys_s", "peak_rss_kb")  # a command workload's, stored in extra["command"]
METER = {"meter_j": "joules", "meter_w": "watts"}  # the external meter's, in extra["energy"]["meter"]
# names with a unit in them: (field, factor from the table's unit to the field's)
ALIASES: dict[str, tuple[str, float]] = {
    **{f"{side}_{u}": (f"{side}_bps", f) for side in ("receiver", "sender", "reverse_receiver") for u, f in (("gbps", 1e9), ("mbps", 1e6))},
    "rtt_us": ("rtt_mean_us", 1.0), "rtt_ms": ("rtt_mean_us", 1e3), "wall": ("wall_s", 1.0),
}


@dataclass(frozen=True)
class TableMetric:
    field: str  # the run field it fills
    factor: float  # table value * factor = the field's value
    integer: bool

    def put(self, res: TestResult, value: float) -> None:
        v: Any = int(round(value * self.factor)) if self.integer else value * self.factor
        if self.field in COMMAND:
            res.extra.setdefault("command", {})[self.field] = v
        elif self.field in METER:
            res.extra.setdefault("energy", {}).setdefault("meter", {})[METER[self.field]] = v
        else:
            setattr(res, self.field, v)


@cache
def table_metrics() -> dict[str, TableMetric]:
    """Every METRIC a table column can be mapped to, by name."""
    fields = {f.name: f for f in dataclasses.fields(RunRecord)}
    out: dict[str, TableMetric] = {}
    for name, f in fields.items():
        kind = str(f.type)
        if name in NOT_MEASURED or not kind.startswith(("float", "int")):
            continue
        out[name] = TableMetric(name, 1.0, kind.startswith("int"))
    for alias, (name, factor) in ALIASES.items():
        out[alias] = TableMetric(name, factor, out[name].integer)
    return out


def throughput(name: str) -> bool:
    return table_metrics()[name].field.endswith("_bps")
