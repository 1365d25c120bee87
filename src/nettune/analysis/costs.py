"""What a point costs: CPU per side in cores (whatever unit each figure was stored in), and
watts where a machine's power was measured. The frontier and the cost curves weigh
throughput against these; the tables print each CPU figure in its stored unit.

Cost keys: `cpu_client`, `cpu_server` (the tool's processes), `cpu_host` (the test machine),
`hypervisor:NAME` (an ssh target's hypervisor), `watts:KEY` (the run's energy part,
`energy.hosts[KEY].watts`: `machine`, `hypervisor:NAME`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..store.cpu_units import CORES, label as unit_label, native_unit, to_cores
from ..store.records import RunRecord
from .data import PointData, StudyData

SIDE_COLUMNS = {"client": "cpu_client", "server": "cpu_server", "host": "cpu_host"}


@dataclass(frozen=True)
class Cost:
    key: str  # cpu_client, cpu_server, cpu_host, hypervisor:NAME, watts:KEY
    name: str  # "server CPU", "hypervisor pve CPU", "machine power"
    unit: str  # "cores" or "W"
    machine_cores: int | None  # the core count a % of the machine is converted with

    def run_value(self, run: RunRecord) -> float | None:
        """This cost of one run in cores (CPU) or watts."""
        if self.key.startswith("watts:"):
            host = run.energy.hosts.get(self.key.removeprefix("watts:")) if run.energy is not None else None
            return None if host is None or host.watts is None else float(host.watts)
        raw = run.cpu_extra.get(self.key) if self.key.startswith("hypervisor:") else run.get(self.key)
        if raw is None:
            return None
        return to_cores(float(raw), run.cpu_units.get(self.key) or native_unit(self.key), self.machine_cores)

    def values(self, point: PointData) -> list[float]:
        return [v for v in (self.run_value(r) for r in point.counted) if v is not None]

    @property
    def is_cpu(self) -> bool:
        return self.unit == CORES


def _host_of(data: StudyData, role: str) -> str | None:
    wl = data.spec().get("workload") or {}
    host = wl.get(role)
    return str(host) if host else None


def machine_cores(data: StudyData, key: str) -> int | None:
    """The core count of the machine a CPU figure was measured on (host facts)."""
    if key.startswith("hypervisor:"):
        n = (data.facts.get(key.removeprefix("hypervisor:")) or {}).get("cpu_count")
        return int(n) if n else None
    if key == "cpu_server":
        n = (data.facts.get(_host_of(data, "server") or "") or {}).get("cpu_count")
        if n:
            return int(n)
    return data.host_cores()


def costs(data: StudyData) -> list[Cost]:
    """Every cost the study measured on at least one counted run, in a fixed order."""
    runs = [r for p in data.points for r in p.counted]
    out = [Cost(col, f"{side} CPU", CORES, machine_cores(data, col)) for side, col in SIDE_COLUMNS.items()]
    hyper = sorted({k for r in runs for k in r.cpu_extra if k.startswith("hypervisor:")})
    out += [Cost(k, f"hypervisor {k.removeprefix('hypervisor:')} CPU", CORES, machine_cores(data, k)) for k in hyper]
    energy = sorted({k for r in runs if r.energy is not None for k, h in r.energy.hosts.items() if h.watts is not None})
    out += [Cost(f"watts:{k}", f"{k.replace('hypervisor:', 'hypervisor ')} power", "W", None) for k in energy]
    return [c for c in out if any(c.run_value(r) is not None for r in runs)]


def stored_unit(data: StudyData, column: str) -> tuple[str, str]:
    """(unit, header label) of a CPU column as the study stored it; 'mixed' when its runs
    disagree (the tables then show cores)."""
    units = {r.cpu_units.get(column) or native_unit(column) for p in data.points for r in p.counted if r.get(column) is not None}
    if not units:
        unit = native_unit(column)
    elif len(units) > 1:
        return "mixed", "cores"
    else:
        unit = units.pop()
    return unit, unit_label(unit, machine_cores(data, column))


def display_values(data: StudyData, point: PointData, column: str) -> list[float]:
    """A point's CPU figures of one column in the unit its header names (stored_unit)."""
    unit, _ = stored_unit(data, column)
    if unit != "mixed":
        return [float(v) for v in (r.get(column) for r in point.counted) if v is not None]
    cost = Cost(column, column, CORES, machine_cores(data, column))
    return cost.values(point)
