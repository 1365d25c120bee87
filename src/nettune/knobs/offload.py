"""offload:FEATURE[@DEV] = "on" | "off"  (gro, gso, tso, lro, rx, tx, sg, ... via ethtool -k/-K)

FEATURE is an ethtool short name (gro, gso, tso, lro, rx, tx, sg, rxvlan, txvlan, ntuple,
rxhash) or any feature name `ethtool -k` lists (rx-gro-list, tx-udp-segmentation...).
A feature the driver marks [fixed] cannot change: that is a validation error. FreeBSD
hosts use ifconfig (lro, tso, rxcsum, txcsum).
"""
from __future__ import annotations

import re
from typing import Any

from ..targets.base import Host
from .base import Ctx, Kind, KnobError, Loc, Persisted, catalog_row, need_device, on_off, run_ok

SHORT = {
    "gro": "generic-receive-offload",
    "gso": "generic-segmentation-offload",
    "tso": "tcp-segmentation-offload",
    "lro": "large-receive-offload",
    "rx": "rx-checksumming",
    "tx": "tx-checksumming",
    "sg": "scatter-gather",
    "rxvlan": "rx-vlan-offload",
    "txvlan": "tx-vlan-offload",
    "ntuple": "ntuple-filters",
    "rxhash": "receive-hashing",
    "ufo": "udp-fragmentation-offload",
}
LONG = {v: k for k, v in SHORT.items()}
# features NetworkManager stores in a connection (ethtool.feature-NAME)
NM_FEATURES = ("gro", "gso", "tso", "lro", "rx", "tx", "sg", "rxvlan", "txvlan", "ntuple", "rxhash")
FREEBSD = {"lro": "LRO", "tso": "TSO4", "rx": "RXCSUM", "tx": "TXCSUM"}
_FREEBSD_FLAG = {"lro": "lro", "tso": "tso", "rx": "rxcsum", "tx": "txcsum"}
_LINE = re.compile(r"^\s*([A-Za-z0-9_-]+): (on|off)( \[fixed\])?")


def features(ex: Host, dev: str, what: str) -> dict[str, tuple[str, bool]]:
    """{feature name: (on|off, fixed)} from `ethtool -k DEV`."""
    out = run_ok(ex, ["ethtool", "-k", dev], what)
    feats = {}
    for line in out.splitlines():
        m = _LINE.match(line)
        if m:
            feats[m.group(1)] = (m.group(2), bool(m.group(3)))
    return feats


class Offload(Kind):
    name = "offload"
    takes_arg, example_arg = "required", "gro"
    needs_device = True

    def _long(self, loc: Loc) -> str:
        arg = loc.arg or ""
        return SHORT.get(arg, arg)

    def _set_name(self, loc: Loc) -> str:
        arg = loc.arg or ""
        return LONG.get(arg, arg)

    def parse(self, loc: Loc, raw: Any) -> str:
        if not re.fullmatch(r"[a-z0-9-]+", loc.arg or ""):
            raise KnobError(f"{loc.key}: {loc.arg!r} is not an offload feature name (e.g. gro, gso, tso, lro, rx, tx)")
        return on_off(loc, raw)

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        dev = need_device(ex, loc)
        if ex.os == "freebsd":
            if loc.arg not in FREEBSD:
                raise KnobError(f"{loc.key}: on FreeBSD only {', '.join(FREEBSD)} can be set (ifconfig)")
            return
        feats = features(ex, dev, loc.key)
        name = self._long(loc)
        if name not in feats:
            known = ", ".join(sorted(SHORT))
            raise KnobError(f"{loc.key}: {dev} has no feature {name!r} (short names: {known}; or a name from ethtool -k {dev})")
        state, fixed = feats[name]
        if fixed and state != value:
            raise KnobError(f"{loc.key}: {name} is fixed {state} on {dev} (the driver does not allow changing it)")

    def read(self, ex: Host, loc: Loc) -> str:
        dev = loc.device or ""
        if ex.os == "freebsd":
            out = run_ok(ex, ["ifconfig", dev], loc.key)
            m = re.search(r"options=[0-9a-f]+<([^>]*)>", out)
            return "on" if m and FREEBSD.get(loc.arg or "", "?") in m.group(1).split(",") else "off"
        feats = features(ex, dev, loc.key)
        name = self._long(loc)
        if name not in feats:
            raise KnobError(f"{loc.key}: {dev} has no feature {name!r}")
        return feats[name][0]

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        dev = loc.device or ""
        if ex.os == "freebsd":
            flag = _FREEBSD_FLAG[loc.arg or ""]
            run_ok(ex, ["ifconfig", dev, flag if value == "on" else "-" + flag], loc.key)
            return
        run_ok(ex, ["ethtool", "-K", dev, self._set_name(loc), str(value)], loc.key)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        return [f"ethtool -K {loc.device or '$IFACE'} {self._set_name(loc)} {value}"]

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        name, dev = self._set_name(loc), loc.device
        return Persisted(
            shell=self.commands(loc, value), tuned_net={"features": [f"{name} {value}"]},
            udev=[f'RUN+="/usr/sbin/ethtool -K {dev} {name} {value}"'],
            nm=[f"ethtool.feature-{loc.arg} {value}"] if loc.arg in NM_FEATURES else [],
        )

    def catalog(self) -> list[dict[str, str]]:
        rows = []
        info = {
            "gro": ("merge received packets in software", "on", "on", "latency of small flows"),
            "gso": ("segment large sends in software, late", "on", "on", "low"),
            "tso": ("NIC segments large sends", "on", "on", "buggy NICs corrupt traffic"),
            "lro": ("NIC merges received packets", "off (often fixed)", "on for end hosts", "breaks IP forwarding/bridging"),
            "rx": ("NIC verifies receive checksums", "on", "on", "low"),
            "tx": ("NIC computes send checksums (tso needs it)", "on", "on", "turning it off also disables tso"),
        }
        for short, (what, default, tuned, risk) in info.items():
            rows.append(catalog_row(
                "offload", f'"offload:{short}" = "off"', "interface", what, default, tuned, "no",
                risk, f"ifconfig X [-]{_FREEBSD_FLAG[short]}" if short in _FREEBSD_FLAG else "",
            ))
        return rows
