"""rps[:QUEUE][@DEV] = "MASK"  (Receive Packet Steering: which CPUs process a receive queue)

MASK is a hex CPU mask ("3" = CPUs 0 and 1, "0" = off) written to
/sys/class/net/DEV/queues/rx-N/rps_cpus for every receive queue, or only queue N with
"rps:N". A mask naming a CPU the machine does not have is a validation error.
"""
from __future__ import annotations

import re
from typing import Any

from ...targets.base import Host
from ..base import Ctx, Kind, KnobError, Loc, Persisted, catalog_row, check_plain, need_device, read_file, mixed_uniform, run_ok, same_uniform, write_file


def mask_hex(loc: Loc, raw: Any) -> str:
    if isinstance(raw, bool):
        raise KnobError(f"{loc.key}: expected a hex CPU mask like \"3\" or \"ff\", got {raw!r}")
    if isinstance(raw, int):
        v = raw
    else:
        s = str(raw).strip().lower().replace(",", "")
        s = s[2:] if s.startswith("0x") else s
        if not re.fullmatch(r"[0-9a-f]+", s):
            raise KnobError(f"{loc.key}: expected a hex CPU mask like \"3\" or \"ff\", got {raw!r}")
        v = int(s, 16)
    if v < 0:
        raise KnobError(f"{loc.key}: a CPU mask cannot be negative")
    return format(v, "x")


def _norm(v: Any) -> dict[str, str] | str:
    if isinstance(v, dict):
        return {k: format(int(str(x).replace(",", ""), 16), "x") for k, x in v.items()}
    return format(int(str(v).replace(",", ""), 16), "x")


class Rps(Kind):
    name = "rps"
    needs_device = True
    prefix, file = "rx", "rps_cpus"

    def parse(self, loc: Loc, raw: Any) -> str:
        if loc.arg is not None and not loc.arg.isdigit():
            raise KnobError(f"{loc.key}: the part after ':' is a queue number ({self.name}:0), got {loc.arg!r}")
        return mask_hex(loc, raw)

    def check_reading(self, loc: Loc, value: Any) -> None:
        """A journaled mask, or one per queue: queue names are this kind's (rx-N / tx-N)."""
        check_plain(loc, value)
        for q, mask in (value.items() if isinstance(value, dict) else [(f"{self.prefix}-0", value)]):
            if not re.fullmatch(rf"{self.prefix}-\d{{1,5}}", str(q)):
                raise KnobError(f"{loc.key}: the journaled reading names {q!r}, not a {self.prefix} queue")
            mask_hex(loc, mask)

    def _queues(self, ex: Host, loc: Loc) -> list[str]:
        dev = loc.device or ""
        out = run_ok(ex, ["ls", f"/sys/class/net/{dev}/queues"], loc.key)
        qs = sorted((q for q in out.split() if q.startswith(self.prefix + "-")), key=lambda q: int(q.split("-")[1]))
        if loc.arg is not None:
            want = f"{self.prefix}-{loc.arg}"
            if want not in qs:
                raise KnobError(f"{loc.key}: {dev} has no queue {want} (it has {', '.join(qs) or 'none'})")
            return [want]
        if not qs:
            raise KnobError(f"{loc.key}: {dev} has no {self.prefix} queues")
        return qs

    def _path(self, loc: Loc, q: str) -> str:
        return f"/sys/class/net/{loc.device}/queues/{q}/{self.file}"

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        dev = need_device(ex, loc)
        bits = int(value, 16).bit_length()
        if bits > ctx.cpus:
            raise KnobError(f"{loc.key}: mask {value} names CPU {bits - 1} but this machine has {ctx.cpus} CPU{'s' if ctx.cpus > 1 else ''} (0..{ctx.cpus - 1})")
        for q in self._queues(ex, loc):
            if ex.run(["test", "-w", self._path(loc, q)], timeout=10).returncode != 0:
                raise KnobError(f"{loc.key}: {self._path(loc, q)} is not writable on {dev} (kernel without RPS/XPS, or not root)")

    def read(self, ex: Host, loc: Loc) -> dict[str, str]:
        return {q: format(int(read_file(ex, self._path(loc, q), loc.key).strip().replace(",", "") or "0", 16), "x") for q in self._queues(ex, loc)}

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        v = _norm(value)
        per_queue = v if isinstance(v, dict) else {q: v for q in self._queues(ex, loc)}
        for q, mask in per_queue.items():
            write_file(ex, self._path(loc, q), mask, loc.key)

    def same(self, a: Any, b: Any) -> bool:
        return same_uniform(_norm(a), _norm(b), str)

    def between(self, current: Any, original: Any, new: Any) -> bool:
        return mixed_uniform(_norm(current), _norm(original), _norm(new), str)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        dev = loc.device or "$IFACE"
        v = _norm(value)
        if isinstance(v, dict):
            return [f"echo {m} > /sys/class/net/{dev}/queues/{q}/{self.file}" for q, m in v.items()]
        q = f"{self.prefix}-{loc.arg}" if loc.arg is not None else f"{self.prefix}-*"
        return [f"for f in /sys/class/net/{dev}/queues/{q}/{self.file}; do echo {v} > $f; done"]

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        out = Persisted(shell=self.commands(loc, value))
        queues = value if isinstance(value, dict) else {f"{self.prefix}-{loc.arg if loc.arg is not None else 0}": value}
        if not isinstance(value, dict) and loc.arg is None:
            out.notes.append(f"{loc.key}: set for every {self.prefix} queue; the files list queue 0, add the others")
        for q, m in queues.items():
            out.sysfs.append((f"/sys/class/net/{loc.device}/queues/{q}/{self.file}", str(m)))
            out.udev.append(f'ATTR{{queues/{q}/{self.file}}}="{m}"')
        return out

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "rps", '"rps" = "3"  ("rps:0" for queue 0)', "interface", "CPUs that process packets of a receive queue (hex mask)",
            "0 (off)", "NIC-local CPUs", "no", "cross-NUMA traffic; CPU cost", "net.isr.* loader tunables",
        )]
