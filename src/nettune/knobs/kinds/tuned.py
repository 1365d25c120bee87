"""tuned = "throughput-performance"  (the active tuned profile; "off" turns tuned off)

Machine-wide. Needs tuned installed and its daemon running; otherwise validation says
so. Applied after an amd_pstate mode and before the point's single settings (a study's
own cpufreq:governor or sysctl wins over the profile's); the CPUs' governor and EPP are
read back with every point (docs/knobs.md, "tuned and amd_pstate"). A profile can leave state behind that only a reboot clears (study C measured idle
power drift): nettune restores the previous profile, not every value it touched.
"""
from __future__ import annotations

import re
from typing import Any

from ...targets.base import Host
from ..base import Ctx, Kind, KnobError, Loc, Persisted, catalog_row
from ..cpu_files import cpu_power


class Tuned(Kind):
    name = "tuned"
    takes_arg = "never"
    host_wide = True
    apply_order = 1  # after an amd_pstate mode (which replaces the policies it writes), before single settings

    def read_back(self, ex: Host) -> dict[str, Any]:
        """The governor and EPP the profile left (its [cpu] plugin writes them per CPU)."""
        return cpu_power(ex)

    def parse(self, loc: Loc, raw: Any) -> str:
        v = " ".join(str(raw).split())
        if not v or not all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", w) for w in v.split()):  # no word reads as an option
            raise KnobError(f"{loc.key}: {raw!r} is not a tuned profile name")
        return v

    def _tool(self, ex: Host, loc: Loc, argv: list[str]) -> str:
        r = ex.run(["tuned-adm", *argv], timeout=120)
        if r.returncode == 127 or "command not found" in r.stderr:
            raise KnobError(f"{loc.key}: tuned is not installed on this host (install the tuned package and start tuned.service, or drop this knob)")
        if r.returncode != 0:
            raise KnobError(f"{loc.key}: tuned-adm {' '.join(argv)} failed: {r.said() or r.returncode}")
        return r.stdout

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        out = self._tool(ex, loc, ["list"])
        profiles = {m.group(1) for m in re.finditer(r"^-\s+(\S+)", out, re.M)}
        for p in str(value).split():
            if value != "off" and profiles and p not in profiles:
                raise KnobError(f"{loc.key}: no tuned profile {p!r} (tuned-adm list shows {len(profiles)}: {', '.join(sorted(profiles)[:8])}...)")
        self.read(ex, loc)

    def read(self, ex: Host, loc: Loc) -> str:
        out = self._tool(ex, loc, ["active"])
        m = re.search(r"Current active profile:\s*(.+)", out)
        return " ".join(m.group(1).split()) if m else "off"

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        self._tool(ex, loc, ["off"] if value == "off" else ["profile", *str(value).split()])

    def same(self, a: Any, b: Any) -> bool:
        return " ".join(str(a).split()) == " ".join(str(b).split())

    def linux_sysctls(self, loc: Loc) -> list[str] | None:
        return None  # a profile's [sysctl] section is the profile's

    def commands(self, loc: Loc, value: Any) -> list[str]:
        return ["tuned-adm off" if value == "off" else f"tuned-adm profile {value}"]

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        return Persisted(shell=self.commands(loc, value), tuned_main=[f"include={value}"])

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "tuned", '"tuned" = "throughput-performance"', "machine", "tuned profile (bundles sysctls, CPU governor, ...)",
            "balanced / virtual-guest", "network-throughput, throughput-performance", "no (bootloader plugin needs a reboot)",
            "may leave state a reboot clears; reapply_sysctl overrides /etc/sysctl.d", "n/a",
        )]
