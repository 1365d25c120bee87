"""cpufreq:governor = "performance" | cpufreq:epp = "performance"  (every CPU)

governor: /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor, one of
scaling_available_governors. epp: energy_performance_preference (intel_pstate with HWP,
amd-pstate-epp), one of energy_performance_available_preferences or 0-255. With the
`performance` governor the driver pins EPP (intel_pstate refuses other values,
amd-pstate-epp answers EBUSY): put cpufreq:governor before cpufreq:epp in [knobs].
"""
from __future__ import annotations

import re
from typing import Any

from ...targets.base import Host
from ..base import Ctx, KnobError, Loc, catalog_row, read_file
from ..cpu_files import BASE, CpuFiles, need_writable

FILES = {"governor": ("cpufreq/scaling_governor", "cpufreq/scaling_available_governors"),
         "epp": ("cpufreq/energy_performance_preference", "cpufreq/energy_performance_available_preferences")}


class CpuFreq(CpuFiles):
    name = "cpufreq"
    example_arg = "governor"

    def parse(self, loc: Loc, raw: Any) -> str:
        if loc.arg not in FILES:
            raise KnobError(f"{loc.key}: cpufreq:governor or cpufreq:epp, not cpufreq:{loc.arg}")
        v = str(raw).strip()
        if not v or not all(c.isalnum() or c in "_-" for c in v):
            raise KnobError(f"{loc.key}: {raw!r} is not a {loc.arg} name")
        return v

    def rel_pattern(self, loc: Loc) -> str:
        return re.escape(FILES[loc.arg or "governor"][0])

    def rel_files(self, ex: Host, loc: Loc) -> list[str]:
        rel = FILES[loc.arg or ""][0]
        out = []
        for cpu in self.cpus(ex, loc):
            if ex.run(["test", "-e", f"{BASE}{cpu}/{rel}"], timeout=10).returncode == 0:
                out.append(f"{cpu}/{rel}")
        if not out:
            why = ("no CPU exposes cpufreq (a VM, or frequency scaling off in firmware)" if loc.arg == "governor"
                   else "no CPU has energy_performance_preference (it needs intel_pstate with HWP or amd-pstate in active mode: amd_pstate:mode = \"active\")")
            raise KnobError(f"{loc.key}: {why}")
        return out

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        files = self.rel_files(ex, loc)
        cpu0 = files[0].split("/")[0]
        avail = read_file(ex, f"{BASE}{cpu0}/{FILES[loc.arg or ''][1]}", loc.key).split()
        if value not in avail and not (loc.arg == "epp" and str(value).isdigit() and int(value) <= 255):
            raise KnobError(f"{loc.key}: {value!r} is not offered here (available: {', '.join(avail)})")
        if loc.arg == "epp" and value != "performance":
            govs = {read_file(ex, f"{BASE}{f.split('/')[0]}/cpufreq/scaling_governor", loc.key).strip() for f in files}
            if govs == {"performance"}:
                raise KnobError(f"{loc.key}: the governor is performance, which pins EPP; set \"cpufreq:governor\" (before this knob) to powersave first")
        need_writable(ex, loc, [BASE + f for f in files])

    def loop_command(self, loc: Loc, value: Any) -> str:
        return f"for f in {BASE}cpu*/{FILES[loc.arg or ''][0]}; do echo {value} > $f; done"

    def catalog(self) -> list[dict[str, str]]:
        return [
            catalog_row("cpufreq", '"cpufreq:governor" = "performance"', "machine (every CPU)", "CPU frequency governor",
                        "schedutil / powersave (distribution's)", "performance", "no", "power and heat", "powerd / powerd++ (rc.conf)"),
            catalog_row("cpufreq", '"cpufreq:epp" = "performance"', "machine (every CPU)", "energy-performance preference (HWP / amd-pstate-epp)",
                        "balance_performance", "performance", "no", "power", "dev.hwpstate_intel.N.epp"),
        ]
