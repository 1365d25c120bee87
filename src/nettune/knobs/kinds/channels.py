"""channels[:rx|tx|combined|other][@DEV] = N  (NIC queue counts, ethtool -l / -L)

"channels" = N sets combined channels when the device has them, else rx and tx both.
Changing channels rebuilds the NIC's queues: RSS, XPS and IRQ layouts are reset. In
the lab a veth has as many channels as [target] queues gives it.
"""
from __future__ import annotations

from typing import Any

from ...targets.base import Host
from ..base import LINK_RESET, Ctx, Disruption, Kind, KnobError, Loc, Persisted, catalog_row, check_plain, need_device, run_ok, same_uniform, whole

TYPES = ("rx", "tx", "other", "combined")


def ethtool_sections(text: str) -> tuple[dict[str, int], dict[str, int]]:
    """(pre-set maximums, current settings) from `ethtool -l` / `ethtool -g` output; n/a -> 0."""
    maxes: dict[str, int] = {}
    cur: dict[str, int] = {}
    section: dict[str, int] | None = None
    for line in text.splitlines():
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            section = maxes
        elif low.startswith("current hardware settings"):
            section = cur
        elif section is not None and ":" in line:
            k, v = line.split(":", 1)
            k = k.strip().lower().replace(" ", "-")
            v = v.strip()
            if v.isdigit():
                section[k] = int(v)
            elif v == "n/a":
                section[k] = 0
    return maxes, cur


def as_dict(v: Any) -> dict[str, int] | int:
    return {str(k): int(x) for k, x in v.items()} if isinstance(v, dict) else int(v)


def same_counts(a: Any, b: Any) -> bool:
    return same_uniform(as_dict(a), as_dict(b), int)


class Channels(Kind):
    name = "channels"
    needs_device = True
    tool_read, tool_set, what = "-l", "-L", "channels"
    types: tuple[str, ...] = TYPES
    default_types = ("rx", "tx")
    persist_types: tuple[str, ...] = ("combined",)  # what a plain N means in persisted files
    bounded_by_lab_queues = True  # a lab veth has as many channels as [target] queues gives it

    def parse(self, loc: Loc, raw: Any) -> int:
        if loc.arg and loc.arg not in self.types:
            raise KnobError(f"{loc.key}: {loc.arg!r} is not one of {', '.join(self.types)}")
        return whole(loc, raw, 0 if loc.arg == "other" else 1)

    def check_reading(self, loc: Loc, value: Any) -> None:
        """A journaled count, or one per type (this kind's types only)."""
        check_plain(loc, value)
        for t, n in (value.items() if isinstance(value, dict) else [(loc.arg or self.types[0], value)]):
            if t not in self.types or isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 1 << 20:
                raise KnobError(f"{loc.key}: the journaled reading {t!r}: {n!r} is not a {self.what} count")

    def _info(self, ex: Host, loc: Loc) -> tuple[dict[str, int], dict[str, int]]:
        dev = loc.device or ""
        r = ex.run(["ethtool", self.tool_read, dev], timeout=15)
        if r.returncode == 127:
            raise KnobError(f"{loc.key}: ethtool is not installed on this host")
        if r.returncode != 0:
            raise KnobError(f"{loc.key}: {dev} does not report {self.what} (ethtool {self.tool_read}: {r.said() or r.returncode})")
        return ethtool_sections(r.stdout)

    def _types(self, loc: Loc, maxes: dict[str, int]) -> list[str]:
        if loc.arg:
            return [loc.arg]
        if "combined" in self.types and maxes.get("combined", 0) > 0:
            return ["combined"]
        return [t for t in self.default_types if maxes.get(t, 0) > 0]

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        dev = need_device(ex, loc)
        maxes, _ = self._info(ex, loc)
        types = self._types(loc, maxes)
        if not types:
            raise KnobError(f"{loc.key}: {dev} has no settable {self.what} (all maximums are 0 or n/a)")
        for t in types:
            hi = maxes.get(t, 0)
            if hi == 0:
                raise KnobError(f"{loc.key}: {dev} has no {t} {self.what} (maximum n/a)")
            if value > hi:
                raise KnobError(f"{loc.key}: {value} {t} {self.what} is more than {dev} supports ({hi})")
            if self.bounded_by_lab_queues and ctx.queues is not None and value > ctx.queues:
                raise KnobError(f"{loc.key}: {value} {t} channels is more than the lab gives {dev} at this point (queues = {ctx.queues})")

    def read(self, ex: Host, loc: Loc) -> dict[str, int]:
        maxes, cur = self._info(ex, loc)
        return {t: cur.get(t, 0) for t in self._types(loc, maxes)}

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        v = as_dict(value)
        if isinstance(v, int):
            maxes, _ = self._info(ex, loc)
            v = {t: v for t in self._types(loc, maxes)}
        argv = ["ethtool", self.tool_set, loc.device or ""]
        for t, n in v.items():
            argv += [t, str(n)]
        run_ok(ex, argv, loc.key)

    def same(self, a: Any, b: Any) -> bool:
        return same_counts(a, b)

    def disruption(self, loc: Loc) -> Disruption:
        # ethtool -L / -G: the driver frees and re-allocates its queues (ixgbe, i40e, mlx5 and virtio-net reset the device)
        return Disruption(LINK_RESET, "", f"the driver rebuilds {loc.device or 'the interface'}'s queues; its link goes down and up")

    def restore_commands(self, loc: Loc) -> list[str]:
        return [f"ethtool {self.tool_set} {loc.device or '$IFACE'} <original counts, as ethtool {self.tool_read} showed them>"]

    def check_offline(self, loc: Loc, value: Any, queues: int | None) -> None:
        """A lab veth has as many channels as [target] queues gives it at this point."""
        if self.bounded_by_lab_queues and queues is not None and isinstance(value, int) and value > queues:
            raise KnobError(f"{loc.key}: {value} channels is more than the target gives the interface at this point (queues = {queues})")

    def commands(self, loc: Loc, value: Any) -> list[str]:
        v = as_dict(value)
        args = " ".join(f"{t} {n}" for t, n in v.items()) if isinstance(v, dict) else f"{loc.arg or 'combined'} {v}"
        return [f"ethtool {self.tool_set} {loc.device or '$IFACE'} {args}"]

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        v, dev = as_dict(value), loc.device
        if isinstance(v, dict):
            pairs = list(v.items())
        elif loc.arg:
            pairs = [(loc.arg, v)]
        else:
            pairs = [(t, v) for t in self.persist_types]
        words = [f"{t} {n}" for t, n in pairs]
        return Persisted(
            shell=self.commands(loc, value), tuned_net={self.name: words},
            udev=[f'RUN+="/usr/sbin/ethtool {self.tool_set} {dev} {" ".join(words)}"'],
            nm=[f"ethtool.{self.name}-{t} {n}" for t, n in pairs],
        )

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "channels", '"channels" = 8  ("channels:combined", ":rx", ":tx")', "interface", "NIC queue (channel) count",
            "driver (often = CPUs)", "about the NIC-local cores", "no, but the NIC rebuilds its queues",
            "resets RSS/XPS/IRQ layout; link may blip", "iflib override_nrxqs/ntxqs (loader.conf, reboot)",
        )]
