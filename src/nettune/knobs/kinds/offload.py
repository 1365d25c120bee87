"""offload:FEATURE[@DEV] = "on" | "off"  (gro, gso, tso, lro, rx, tx, sg, ... via ethtool -k/-K)

FEATURE is an ethtool short name (gro, gso, tso, lro, rx, tx, sg, rxvlan, txvlan, ntuple,
rxhash) or any feature name `ethtool -k` lists (rx-gro-list, tx-udp-segmentation...).
A feature the driver marks [fixed] cannot change: that is a validation error. FreeBSD
hosts use ifconfig: a feature the interface lacks (not in the `capabilities=` line of
`ifconfig -m IF`) is refused before the study starts, because ifconfig accepts the
command, exits 0 and leaves it off (`ifconfig bridge0 lro`). On every OS the value is
read back after apply and the point fails when it did not take (must_read_back).
"""
from __future__ import annotations

import re
from typing import Any

from ...targets.base import Host
from ..base import LINK_RESET, Ctx, Disruption, Kind, KnobError, Loc, Persisted, catalog_row, need_device, on_off, run_ok

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
# features that common drivers apply by resetting the device (ixgbe and i40e for lro and
# ntuple, bnxt for rx-gro-hw and lro, e1000e and igb for the VLAN offloads): a change of
# one is announced as a link reset and needs allow_link_reset on an ssh host. Other
# features are applied in place by those drivers (a driver may still differ).
RESETS = {"lro", "large-receive-offload", "rx-gro-hw", "ntuple", "ntuple-filters", "rxvlan", "rx-vlan-offload",
          "txvlan", "tx-vlan-offload"}
# features NetworkManager stores in a connection (ethtool.feature-NAME)
NM_FEATURES = ("gro", "gso", "tso", "lro", "rx", "tx", "sg", "rxvlan", "txvlan", "ntuple", "rxhash")
# FreeBSD: feature -> (ifconfig(8) flag, IFCAP_* names it toggles, as ifconfig prints them)
FREEBSD: dict[str, tuple[str, tuple[str, ...]]] = {
    "lro": ("lro", ("LRO",)),
    "tso": ("tso", ("TSO4", "TSO6")),
    "rx": ("rxcsum", ("RXCSUM",)),
    "tx": ("txcsum", ("TXCSUM",)),
    "tso4": ("tso4", ("TSO4",)),
    "tso6": ("tso6", ("TSO6",)),
    "rxcsum": ("rxcsum", ("RXCSUM",)),
    "txcsum": ("txcsum", ("TXCSUM",)),
    "rxcsum6": ("rxcsum6", ("RXCSUM_IPV6",)),
    "txcsum6": ("txcsum6", ("TXCSUM_IPV6",)),
    "vlanhwtag": ("vlanhwtag", ("VLAN_HWTAGGING",)),
    "vlanhwcsum": ("vlanhwcsum", ("VLAN_HWCSUM",)),
    "vlanhwtso": ("vlanhwtso", ("VLAN_HWTSO",)),
    "vlanhwfilter": ("vlanhwfilter", ("VLAN_HWFILTER",)),
}
_FREEBSD_FLAG = {k: v[0] for k, v in FREEBSD.items()}
_BITS = re.compile(r"^\s*(options|capabilities)=[0-9a-fA-F]+<([^>]*)>", re.M)


def freebsd_caps(text: str) -> tuple[set[str], set[str] | None]:
    """(enabled, supported) capability names from `ifconfig -m IF`: the interface's
    options= and capabilities= lines (not "nd6 options="). supported is None when the
    output has no capabilities= line (plain `ifconfig`, or an interface without any)."""
    enabled: set[str] = set()
    supported: set[str] | None = None
    for m in _BITS.finditer(text):
        names = {n for n in m.group(2).split(",") if n}
        if m.group(1) == "options":
            enabled = names
        else:
            supported = names
    return enabled, supported


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
    must_read_back = True  # FreeBSD's ifconfig and some drivers accept a change and keep the old value

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
            flag, caps = FREEBSD[loc.arg or ""]
            _on, supported = freebsd_caps(run_ok(ex, ["ifconfig", "-m", dev], loc.key))
            if not supported or not supported & set(caps):
                have = ",".join(sorted(supported)) if supported else "none"
                raise KnobError(f"{loc.key}: interface {dev} has no {'/'.join(caps)} capability (ifconfig -m {dev}: capabilities <{have}>), "
                                f"so `ifconfig {dev} {flag}` would change nothing; remove the knob for this host or name an interface that has it")
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
            if loc.arg not in FREEBSD:
                raise KnobError(f"{loc.key}: on FreeBSD only {', '.join(FREEBSD)} can be set (ifconfig)")
            enabled, supported = freebsd_caps(run_ok(ex, ["ifconfig", "-m", dev], loc.key))
            caps = set(FREEBSD[loc.arg or ""][1])
            have = caps & supported if supported is not None else caps
            # on: every capability of the flag that the interface has is enabled (tso: TSO4 and TSO6)
            return "on" if have and have <= enabled else "off"
        feats = features(ex, dev, loc.key)
        name = self._long(loc)
        if name not in feats:
            raise KnobError(f"{loc.key}: {dev} has no feature {name!r}")
        return feats[name][0]

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        dev = loc.device or ""
        if ex.os == "freebsd":
            flag = FREEBSD[loc.arg or ""][0]
            run_ok(ex, ["ifconfig", dev, flag if value == "on" else "-" + flag], loc.key)
            return
        run_ok(ex, ["ethtool", "-K", dev, self._set_name(loc), str(value)], loc.key)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        return [f"ethtool -K {loc.device or '$IFACE'} {self._set_name(loc)} {value}"]

    def disruption(self, loc: Loc) -> Disruption | None:
        if (loc.arg or "") not in RESETS:
            return None
        return Disruption(LINK_RESET, "on drivers that reset the device for it (ixgbe, i40e, bnxt, e1000e, igb)",
                          f"{loc.device or 'the interface'} goes down and up")

    def restore_commands(self, loc: Loc) -> list[str]:
        return self.commands(loc, "<original on|off>")

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
