"""amd_pstate:mode = "active" | "passive" | "guided"   and   cpu:smt = "on" | "off"

One machine-wide sysfs file each: /sys/devices/system/cpu/amd_pstate/status (switchable at
run time since Linux 6.4; kernel Documentation/admin-guide/pm/amd-pstate.rst: writing a
mode makes the driver "switch over" to it; a tuned profile's governor and EPP are applied
again after it, see AmdPstate) and
/sys/devices/system/cpu/smt/control (refused when it reads forceoff, notsupported or
notimplemented). The boot option amd_pstate= stays a kernel command line setting.
"""
from __future__ import annotations

from typing import Any

from ...targets.base import Host
from ..base import Ctx, Kind, KnobError, Loc, catalog_row, read_file, write_file
from ..cpu_files import BASE, cpu_power, reassert_profile


class SysfsSwitch(Kind):
    host_wide = True
    takes_arg = "required"
    must_read_back = True
    arg, path, values, missing = "", "", (), ""

    def parse(self, loc: Loc, raw: Any) -> str:
        if loc.arg != self.arg:
            raise KnobError(f"{loc.key}: the key is {self.name}:{self.arg}")
        v = ("on" if raw else "off") if isinstance(raw, bool) else str(raw).strip()
        if v not in self.values:
            raise KnobError(f"{loc.key}: {raw!r}: use one of {', '.join(self.values)}")
        return v

    def read(self, ex: Host, loc: Loc) -> str:
        try:
            return ex.read_text(self.path).strip()
        except OSError:
            raise KnobError(f"{loc.key}: {self.path} does not exist here: {self.missing}") from None

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        self.read(ex, loc)
        if ex.run(["test", "-w", self.path], timeout=10).returncode != 0:
            raise KnobError(f"{loc.key}: {self.path} is not writable (not root?)")

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        write_file(ex, self.path, f"{value}\n", loc.key)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        return [f"echo {value} > {self.path}"]


class AmdPstate(SysfsSwitch):
    """A mode switch unregisters the driver and registers it again in the new mode, so the
    CPUs get new cpufreq policies: the governor and EPP a tuned profile had set are gone.
    So the mode is set first in a point (apply_order 0), tuned's active profile is applied
    again right after every switch (its restore too), and the governor and EPP in force
    are read back with the point (docs/knobs.md, "tuned and amd_pstate")."""

    name, example_arg, arg = "amd_pstate", "mode", "mode"
    path, values = BASE + "amd_pstate/status", ("active", "passive", "guided")
    missing = "the CPU is not driven by amd-pstate (acpi-cpufreq, Intel, or a VM); boot with amd_pstate=active on an AMD host"
    apply_order = 0

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        super().apply(ex, loc, value)
        reassert_profile(ex)

    def read_back(self, ex: Host) -> dict[str, Any]:
        return cpu_power(ex)

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row("amd_pstate", '"amd_pstate:mode" = "active"', "machine", "amd-pstate operating mode (run time, Linux 6.4+)",
                            "the kernel's default (CONFIG_X86_AMD_PSTATE_DEFAULT_MODE)", "active (with EPP)", "no", "power", "")]


class Smt(SysfsSwitch):
    name, example_arg, arg = "cpu", "smt", "smt"
    path, values = BASE + "smt/control", ("on", "off")
    missing = "this kernel has no SMT control"

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        state = read_file(ex, self.path, loc.key).strip()
        if state in ("forceoff", "notsupported", "notimplemented"):
            raise KnobError(f"{loc.key}: SMT control reads {state}: it cannot be switched here")
        super().validate(ex, loc, value, ctx)

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row("cpu", '"cpu:smt" = "off"', "machine", "simultaneous multithreading (sibling threads offline)",
                            "on", "off for per-core numbers", "no", "half the logical CPUs go away while off", "machdep.hyperthreading_allowed (loader)")]
