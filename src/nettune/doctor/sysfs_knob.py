"""A `command:` knob over a set of per-CPU (or per-queue) sysfs files, for fixes nettune
has no knob kind for (governor, EPP, C-states). The value is "rel/path=value ..." for
every file, so the journal keeps each file's own original and a restore writes each back
exactly (mixed governors stay mixed). The glob is nettune's own constant; values only
ever reach the shell as $1.
"""
from __future__ import annotations

from typing import Any

BASE = "/sys/devices/system/cpu/"
_READ = 'for f in {glob}; do [ -e "$f" ] && printf "%s=%s " "${{f#{base}}}" "$(cat "$f")"; done; true'
_APPLY = 'for w in $1; do printf "%s\\n" "${{w#*=}}" > "{base}${{w%%=*}}" || exit 1; done'


def sysfs_knob(name: str, glob: str, value: str) -> dict[str, Any]:
    """The knob entry `--fix` applies: {"key": "command:NAME", "value": {...}}."""
    return {"key": f"command:{name}", "value": {
        "value": value, "scope": "machine",
        "read": _READ.format(glob=BASE + glob, base=BASE), "apply": _APPLY.format(base=BASE)}}


def per_file(values: dict[str, str], want: str | None = None) -> str:
    """"cpu0/cpufreq/scaling_governor=performance ..." from {absolute path: value}."""
    return " ".join(f"{p.removeprefix(BASE)}={want if want is not None else v}" for p, v in sorted(values.items(), key=lambda kv: _natural(kv[0])))


def _natural(path: str) -> list[Any]:
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]
