"""The unit of every stored CPU figure (schema 4: `runs.cpu_units_json`).

A CPU number means nothing without its unit: nettune's process probes give % of one core,
its machine probes % of all the machine's cores, and an imported table gives whatever its
author used (study A's table is % of the VM). Units are stored per run and per figure
(`cpu_client`, `cpu_server`, `cpu_host`, `cpu_host_softirq`, each `cpu_extra` key), so the
analysis converts every figure to cores before a verdict and every header names the unit.

Units:
  pct_core      % of one core (100 = one core busy): process CPU
  pct_machine   % of all the machine's cores (their count from the host's `cpu_count` fact)
  pct_of_N      % of N cores, e.g. pct_of_16 for "% of a 16-vCPU VM"
  cores         cores busy (1.5 = one and a half cores)
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from ..errors import NettuneError

PCT_CORE, PCT_MACHINE, CORES = "pct_core", "pct_machine", "cores"
_OF_N = re.compile(r"pct_of_(\d+)")
CPU_COLUMNS = ("cpu_client", "cpu_server", "cpu_host", "cpu_host_softirq", "cpu_server_host", "cpu_server_host_softirq")
# what nettune's own probes measure (probes/process_cpu.py, probes/machine_cpu.py, self_cpu.py)
NATIVE = {"cpu_client": PCT_CORE, "cpu_server": PCT_CORE, "cpu_host": PCT_MACHINE, "cpu_host_softirq": PCT_MACHINE,
          "cpu_server_host": PCT_MACHINE, "cpu_server_host_softirq": PCT_MACHINE}
UNITS_HELP = "pct_core (% of one core), pct_machine (% of all the machine's cores), pct_of_N (% of N cores, e.g. pct_of_16), cores"


def check_unit(unit: str, what: str = "--cpu-unit") -> str:
    """A unit as given on the command line; a one-line error for anything else."""
    u = unit.strip().lower()
    if u in (PCT_CORE, PCT_MACHINE, CORES):
        return u
    m = _OF_N.fullmatch(u)
    if m and int(m.group(1)) > 0:
        return u
    raise NettuneError(f"{what} {unit!r}: use {UNITS_HELP}")


def native_unit(key: str) -> str:
    """The unit nettune's own probe writes for a CPU figure (`cpu_extra` keys included:
    `hypervisor:NAME` is a machine's busy %, `nettune` a process's)."""
    if key in NATIVE:
        return NATIVE[key]
    return PCT_MACHINE if key.startswith("hypervisor:") else PCT_CORE


def units_for(columns: dict[str, Any], extra_keys: Iterable[str], declared: dict[str, str] | None) -> dict[str, str]:
    """The unit of each CPU figure a run holds: what an import declared, else the native one."""
    declared = declared or {}
    keys = [k for k in CPU_COLUMNS if columns.get(k) is not None] + list(extra_keys)
    return {k: declared.get(k) or native_unit(k) for k in keys}


def to_cores(value: float | None, unit: str, machine_cores: int | None) -> float | None:
    """A CPU figure in cores busy; None when the unit needs a core count nobody recorded."""
    if value is None:
        return None
    if unit == CORES:
        return value
    if unit == PCT_CORE:
        return value / 100
    m = _OF_N.fullmatch(unit)
    if m:
        return value / 100 * int(m.group(1))
    if unit == PCT_MACHINE:
        return None if not machine_cores else value / 100 * machine_cores
    return None


def machine_cores(client: str | None, facts: Mapping[str, Mapping[str, Any]]) -> int | None:
    """CPU count of the machine whose /proc/stat gives host CPU (`client`'s, else the
    first host's that reported one), from the hosts' facts."""
    for host in [client, *facts]:
        n = (facts.get(host) or {}).get("cpu_count") if host else None
        if n:
            return int(n)
    return None


def label(unit: str, machine_cores: int | None = None) -> str:
    """The unit as a header says it: '% of 1 core', '% of 8 cores', 'cores'."""
    if unit == CORES:
        return "cores"
    if unit == PCT_CORE:
        return "% of 1 core"
    m = _OF_N.fullmatch(unit)
    if m:
        return f"% of {m.group(1)} cores"
    if unit == PCT_MACHINE:
        return f"% of {machine_cores} cores" if machine_cores else "% of all cores"
    return unit


def units_text(units: Mapping[str, object]) -> str:
    """The units as one flat cell (CSV, export): 'cpu_client=pct_core;cpu_host=pct_machine'
    (an export's cpu_extra and tool_cpu numbers the same way: 'nettune=1.5')."""
    return ";".join(f"{k}={v}" for k, v in units.items())


def parse_units_text(text: str | None) -> dict[str, str]:
    """units_text read back (an export imported again); unknown units are left out."""
    out = {}
    for item in (text or "").split(";"):
        key, _, unit = item.partition("=")
        try:
            out[key.strip()] = check_unit(unit, key)
        except NettuneError:
            continue
    return {k: v for k, v in out.items() if k}
