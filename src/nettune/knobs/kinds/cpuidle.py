"""cpuidle:max_state = N  (C-states deeper than state N disabled on every CPU)

Writes /sys/devices/system/cpu/cpuN/cpuidle/stateK/disable: 1 for K > N, 0 for K <= N.
`nettune doctor` shows the states with their exit latencies (cpu.cstate). Source of
truth: kernel Documentation/admin-guide/pm/cpuidle.rst.
"""
from __future__ import annotations

import re
from typing import Any

from ...targets.base import Host
from ..base import Ctx, KnobError, Loc, catalog_row, run_ok, whole
from ..cpu_files import BASE, CpuFiles, need_writable


def _state(rel: str) -> int:
    m = re.search(r"/state(\d+)/", rel)
    return int(m.group(1)) if m else -1


class CpuIdle(CpuFiles):
    name = "cpuidle"
    example_arg = "max_state"

    def parse(self, loc: Loc, raw: Any) -> int:
        if loc.arg != "max_state":
            raise KnobError(f"{loc.key}: the key is cpuidle:max_state")
        return whole(loc, raw, 0, 64)

    def rel_pattern(self, loc: Loc) -> str:
        return r"cpuidle/state\d{1,3}/disable"

    def rel_files(self, ex: Host, loc: Loc) -> list[str]:
        out = []
        for cpu in self.cpus(ex, loc):
            r = ex.run(["ls", f"{BASE}{cpu}/cpuidle"], timeout=10)
            out += [f"{cpu}/cpuidle/{s}/disable" for s in r.stdout.split() if re.fullmatch(r"state\d+", s)] if r.returncode == 0 else []
        if not out:
            raise KnobError(f"{loc.key}: no cpuidle states here (cpuidle off, or a VM without them)")
        return out

    def matches(self, rel: str, current: str, value: Any) -> bool:
        return current == self.wanted(rel, value)

    def wanted(self, rel: str, value: Any) -> str:
        return "1" if _state(rel) > int(value) else "0"

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        files = self.rel_files(ex, loc)
        deepest = max(_state(f) for f in files)
        if int(value) > deepest:
            names = run_ok(ex, ["ls", f"{BASE}cpu0/cpuidle"], loc.key).split()
            raise KnobError(f"{loc.key}: {value} is beyond the deepest state {deepest} ({', '.join(names)})")
        need_writable(ex, loc, [BASE + f for f in files[:4]])

    def loop_command(self, loc: Loc, value: Any) -> str:
        return (f"for d in {BASE}cpu*/cpuidle/state*; do n=${{d##*state}}; "
                f"if [ $n -gt {value} ]; then echo 1; else echo 0; fi > $d/disable; done")

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row("cpuidle", '"cpuidle:max_state" = 1', "machine (every CPU)", "deepest idle state allowed (deeper ones disabled)",
                            "all enabled", "1 for latency tests", "no", "power and heat at idle", "hw.cpu_cx_lowest / sysctl dev.cpu.N.cx_lowest")]
