"""The measurements a results table's columns can be mapped to (`--columns NAME=METRIC`).

Every stored numeric field of the field table (record/fields.py) that measures a test, by
its own name and unit, plus the names with a unit in them that tables used before
(receiver_gbps, rtt_ms, ...). Nothing else in the importers names a field.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from ..engines.result import TestResult
from ..record.fields import FIELDS, Field
from ..record.parts import CommandRun, EnergyRun, MeterReading

# fields that are not a measurement of the test (its place, its bookkeeping), or that
# cannot be given alone (energy_j and power_w are computed together, per machine)
NOT_MEASURED = {"exit_code", "energy_j", "power_w"}
COMMAND = tuple(f.name for f in FIELDS.values() if f.part == "command" and f.name not in NOT_MEASURED)  # a timed command's
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
        part = FIELDS[self.field].part
        if part is None:
            setattr(res, self.field, v)
        elif part == "command":
            res.command = res.command or CommandRun()
            setattr(res.command, self.field, v)
        elif part == "energy":  # the meter's joules or watts: the energy part's sums follow from its reading
            res.energy = res.energy or EnergyRun()
            m = res.energy.meter or MeterReading()
            setattr(m, {"meter_j": "joules", "meter_w": "watts"}[self.field], v)
            res.energy.meter = m
            res.energy.settle()


def _measured(f: Field) -> bool:
    return f.stored and f.type in (int, float) and f.group in ("measures", "command", "energy") and f.name not in NOT_MEASURED


@cache
def table_metrics() -> dict[str, TableMetric]:
    """Every METRIC a table column can be mapped to, by name."""
    out = {f.name: TableMetric(f.name, 1.0, f.type is int) for f in FIELDS.values() if _measured(f)}
    for alias, (name, factor) in ALIASES.items():
        out[alias] = TableMetric(name, factor, out[name].integer)
    return out


def throughput(name: str) -> bool:
    return table_metrics()[name].field.endswith("_bps")
