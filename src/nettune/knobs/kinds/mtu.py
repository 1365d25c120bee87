"""mtu[@DEV] = 9000: the interface MTU, set with `ip link`.

The MTU must lie within the device's own bounds, read via netlink (IFLA_MIN_MTU /
IFLA_MAX_MTU) with pyroute2 on this machine, or from `ip -d -j link` elsewhere. In the
lab the mtu knob changes the host's end only; use [target] mtu to change the whole path.
"""
from __future__ import annotations

import json
from typing import Any

from ...targets.base import Host
from ..base import LINK_RESET, Ctx, Disruption, Kind, KnobError, Loc, Persisted, catalog_row, need_device, read_file, run_ok, whole


def mtu_bounds(ex: Host, dev: str) -> tuple[int | None, int | None]:
    if ex.on_this_machine:  # this machine (or a namespace of it): ask the kernel over netlink
        from pyroute2 import IPRoute, NetNS

        with (NetNS(ex.netns) if ex.netns else IPRoute()) as ipr:
            idx = ipr.link_lookup(ifname=dev)
            if not idx:
                raise KnobError(f"no interface {dev}")
            link = ipr.get_links(idx[0])[0]
            return link.get("IFLA_MIN_MTU"), link.get("IFLA_MAX_MTU")
    r = ex.run(["ip", "-d", "-j", "link", "show", "dev", dev], timeout=10)
    try:
        info = json.loads(r.stdout)[0]
        return info.get("min_mtu"), info.get("max_mtu")
    except (ValueError, IndexError, KeyError):
        return None, None


class Mtu(Kind):
    name = "mtu"
    takes_arg = "never"
    needs_device = True

    def parse(self, loc: Loc, raw: Any) -> int:
        return whole(loc, raw, 68, 65535 * 4)

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        dev = need_device(ex, loc)
        if ex.os != "linux":
            return
        lo, hi = mtu_bounds(ex, dev)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise KnobError(f"{loc.key}: {value} is outside what {dev} accepts ({lo}..{hi})")

    def read(self, ex: Host, loc: Loc) -> int:
        if ex.os == "freebsd":
            out = run_ok(ex, ["ifconfig", loc.device or ""], loc.key)
            return int(out.split(" mtu ", 1)[1].split()[0])
        return int(read_file(ex, f"/sys/class/net/{loc.device}/mtu", loc.key).strip())

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        if ex.os == "freebsd":
            run_ok(ex, ["ifconfig", loc.device or "", "mtu", str(value)], loc.key)
            return
        run_ok(ex, ["ip", "link", "set", "dev", loc.device or "", "mtu", str(value)], loc.key)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        return [f"ip link set dev {loc.device or '$IFACE'} mtu {value}"]

    def disruption(self, loc: Loc) -> Disruption:
        # many drivers (ixgbe, i40e, mlx5, virtio-net with XDP) rebuild their rings for a new MTU: the link goes down and up
        return Disruption(LINK_RESET, "on drivers that rebuild their rings for a new MTU", f"{loc.device or 'the interface'} goes down and up")

    def restore_commands(self, loc: Loc) -> list[str]:
        return self.commands(loc, "<original>")

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        return Persisted(shell=self.commands(loc, value), tuned_net={"mtu": [str(value)]},
                         udev=[f'ATTR{{mtu}}="{value}"'], nm=[f"802-3-ethernet.mtu {value}"])

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "mtu", '"mtu" = 9000  ("mtu@eth0")', "interface", "largest frame the interface sends", "1500", "9000 (jumbo)",
            "no (some drivers reset the link)", "every host on the L2 segment must match; check with ping -M do -s 8972", "ifconfig X mtu N",
        )]
