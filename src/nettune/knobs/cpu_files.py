"""What the per-CPU knob kinds share (cpufreq:governor, cpufreq:epp, cpuidle:max_state):
a file (or files) under every /sys/devices/system/cpu/cpuN, one value for all CPUs; and
what the CPU power kinds (tuned, amd_pstate:mode) read back and re-assert (cpu_power,
reassert_profile: docs/knobs.md, "tuned and amd_pstate").

The value read is {"cpu0/cpufreq/scaling_governor": "schedutil", ...}: every file with
its own value, so the journal keeps each CPU's original and a restore writes each back
(mixed governors stay mixed); a kill -9 between two CPUs leaves a value that is part
original, part new, which `between` recognises. Machine-wide: a lab namespace sets it for
this whole machine. Source of truth: kernel Documentation/admin-guide/pm/cpufreq.rst,
cpuidle.rst, ABI/testing/sysfs-devices-system-cpu.
"""
from __future__ import annotations

import re
from typing import Any

from ..targets.base import Host
from .base import Kind, KnobError, Loc, Persisted, check_plain, read_file, run_ok, write_file

BASE = "/sys/devices/system/cpu/"


def natural_key(rel: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", rel)]


class CpuFiles(Kind):
    host_wide = True
    takes_arg = "required"
    must_read_back = True  # a driver may accept a write and keep its own value (EPP under performance)

    def rel_files(self, ex: Host, loc: Loc) -> list[str]:
        """Relative paths ("cpu0/cpufreq/scaling_governor") of the files this knob writes."""
        raise NotImplementedError

    def rel_pattern(self, loc: Loc) -> str:
        """A regular expression of the relative paths rel_files gives (a journaled reading
        naming any other path is refused)."""
        raise NotImplementedError

    def check_reading(self, loc: Loc, value: Any) -> None:
        check_plain(loc, value)
        if not isinstance(value, dict):
            self.parse(loc, value)
            return
        for rel, v in value.items():
            if not re.fullmatch(r"cpu\d{1,5}/" + self.rel_pattern(loc), rel) or ".." in rel:
                raise KnobError(f"{loc.key}: the journaled reading names {rel!r}, not a file of this knob")
            if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", v):
                raise KnobError(f"{loc.key}: the journaled reading {v!r} of {rel} is not a value of this knob")

    def matches(self, rel: str, current: str, value: Any) -> bool:
        """Does one file's value `current` mean `value` (a scalar for every CPU)?"""
        return current == str(value)

    def wanted(self, rel: str, value: Any) -> str:
        return str(value)

    def cpus(self, ex: Host, loc: Loc) -> list[str]:
        names = [n for n in run_ok(ex, ["ls", BASE], loc.key).split() if re.fullmatch(r"cpu\d+", n)]
        return sorted(names, key=natural_key)

    def read(self, ex: Host, loc: Loc) -> dict[str, str]:
        return {rel: read_file(ex, BASE + rel, loc.key).strip() for rel in self.rel_files(ex, loc)}

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        per_file = value if isinstance(value, dict) else {rel: self.wanted(rel, value) for rel in self.rel_files(ex, loc)}
        for rel, v in per_file.items():
            write_file(ex, BASE + rel, f"{v}\n", loc.key)

    def same(self, a: Any, b: Any) -> bool:
        if isinstance(a, dict) and isinstance(b, dict):
            return a == b
        if not isinstance(a, dict) and not isinstance(b, dict):
            return str(a) == str(b)
        d, v = (a, b) if isinstance(a, dict) else (b, a)
        return bool(d) and all(self.matches(rel, cur, v) for rel, cur in d.items())

    def between(self, current: Any, original: Any, new: Any) -> bool:
        if not isinstance(current, dict) or not current or not isinstance(original, dict):
            return False
        return all(x == original.get(rel) or (self.matches(rel, x, new) if not isinstance(new, dict) else x == new.get(rel))
                   for rel, x in current.items())

    def show(self, value: Any) -> str:
        if not isinstance(value, dict):
            return str(value)
        vals = sorted(set(value.values()))
        return vals[0] if len(vals) == 1 else "mixed: " + ", ".join(f"{v} on {sum(x == v for x in value.values())}" for v in vals)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        if isinstance(value, dict):
            return [f"echo {v} > {BASE}{rel}" for rel, v in sorted(value.items(), key=lambda kv: natural_key(kv[0]))]
        return [self.loop_command(loc, value)]

    def loop_command(self, loc: Loc, value: Any) -> str:
        raise NotImplementedError

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        return Persisted(shell=self.commands(loc, value), notes=[f"{loc.key}: a tuned profile ([cpu] governor / energy_perf_bias) keeps this across reboots; apply.sh has the commands"])


def need_writable(ex: Host, loc: Loc, paths: list[str]) -> None:
    for p in paths:
        if ex.run(["test", "-w", p], timeout=10).returncode != 0:
            raise KnobError(f"{loc.key}: {p} is not writable (not root, or the driver does not allow it)")


CPU_POWER = {"governor": "cpufreq/scaling_governor", "epp": "cpufreq/energy_performance_preference"}


def cpu_power(ex: Host) -> dict[str, str]:
    """The CPUs' frequency settings as a point's tuned profile and amd_pstate mode leave
    them: the scaling driver, the amd_pstate mode, and each CPU's governor and EPP (one
    value, or "mixed: a on 2, b on 2"); a file the host lacks is left out (no cpufreq in a
    VM, no EPP outside amd-pstate's active mode)."""
    out: dict[str, str] = {}
    for name, rel in (("scaling_driver", "cpu0/cpufreq/scaling_driver"), ("amd_pstate", "amd_pstate/status")):
        try:
            out[name] = ex.read_text(BASE + rel).strip()
        except OSError:
            pass
    r = ex.run(["ls", BASE], timeout=15)
    cpus = sorted((n for n in r.stdout.split() if re.fullmatch(r"cpu\d+", n)), key=natural_key) if r.returncode == 0 else []
    for name, rel in CPU_POWER.items():
        vals = {}
        for cpu in cpus:
            try:
                vals[cpu] = ex.read_text(f"{BASE}{cpu}/{rel}").strip()
            except OSError:
                continue
        if vals:
            kinds = sorted(set(vals.values()))
            out[name] = kinds[0] if len(kinds) == 1 else "mixed: " + ", ".join(f"{v} on {sum(x == v for x in vals.values())}" for v in kinds)
    return out


def reassert_profile(ex: Host) -> str | None:
    """Apply tuned's active profile again (`tuned-adm profile NAME`), after an amd_pstate
    mode switch replaced the CPUs' cpufreq policies and with them the governor and EPP the
    profile had set. The profile applied, or None when tuned is not there or has none."""
    r = ex.run(["tuned-adm", "active"], timeout=60)
    m = re.search(r"Current active profile:\s*(.+)", r.stdout) if r.returncode == 0 else None
    if m is None:
        return None
    profile = " ".join(m.group(1).split())
    run_ok(ex, ["tuned-adm", "profile", *profile.split()], "tuned-adm profile (again, after the amd_pstate mode switch)", timeout=120)
    return profile
