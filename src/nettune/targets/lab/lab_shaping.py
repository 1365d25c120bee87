"""Shaping of the lab's links with tc, through pyroute2's tc API; nothing is read back by
parsing `tc` output.

A link is a veth pair: its host end sends (the host's uplink), its switch end, on the
bridge, delivers to the host (its downlink).

Rate: on the switch end, towards the receiver, never on the sender's own end. Measured
on this kernel (2 Gbit/s of UDP asked over a 1 Gbit/s link, 8900-byte datagrams): with
the rate's tbf on the sender's own veth the packets queue while they still belong to the
sender's socket, which then blocks: 0.99 Gbit/s sent, 0.6% loss, where a real bottleneck
drops half; on the switch end the sender sends what it was asked for and the queue drops
what exceeds the rate: 2.15 sent, 0.99 received, 54% lost. So each switch end carries an
htb: one class at the receiver's rate (its link), under it a class per sending host at
the slower of the two hosts' rates, whose tbf queue (QUEUE_SECONDS at that rate) is the
bottleneck buffer. Senders to one receiver share its link; one sender's traffic to
several receivers does not share its own (not modelled). Traffic from no lab host (the
root namespace, ARP) is not classified: htb passes it unshaped.

Delay, jitter and loss (netem) sit on both ends: the spec's delay is a round-trip time of
which a link carries half (two hosts' links make the path), so each end gets a quarter;
jitter is split the same way; loss applies as given to each direction. On the switch
end netem is the root and the htb its child. (netem on a sender's own end holds packets
of its socket too: a UDP sender is held back once its socket buffer is in flight on the
delay line; not measured here: this kernel has no netem.)
"""
from __future__ import annotations

import errno
import ipaddress
from typing import Any

from pyroute2 import IPRoute, NetNS
from pyroute2.netlink.exceptions import NetlinkError

from ...errors import NettuneError

ROOT = 0xFFFFFFFF
NETEM = 0x10000   # 1:
NETEM_CLASS = 0x10001  # 1:1, where netem's child goes
TBF = 0x20000     # 2: (a node's underlay link: netem and tbf as one link)
HTB = 0x30000     # 3: the switch end's classes: 3:1 the receiver's link, 3:(100+i) sender i
GSO_MAX = 65536   # veths pass 64 KiB GSO packets: the bucket holds at least two
NO_NETEM = ("lab: delay, jitter and loss need the kernel's netem qdisc, which this kernel lacks "
            "(CONFIG_NET_SCH_NETEM); remove them from [target.link] / [target.underlay] (rate works: tbf) or use a kernel with sch_netem")
QUEUE_SECONDS = 0.02  # tbf queue: 20 ms at the rate (a router's bottleneck buffer)


def shaped(shape: Any) -> bool:
    """Whether a LinkShape (or None) asks for any qdisc."""
    return shape is not None and any(v for v in shape.values().values())


def netem_args(shape: Any) -> dict[str, Any] | None:
    """netem's options for one direction (None: no netem)."""
    delay, jitter, loss = shape.delay or 0.0, shape.jitter or 0.0, shape.loss or 0.0
    if not (delay or jitter or loss):
        return None
    one_way_s = delay / 4 / 1000
    # netem's queue holds every packet in flight on the delay line: at the rate (or at
    # a veth's ~40 Gbit/s when unshaped) over the delay, in 1500-byte packets, with margin
    rate = shape.rate or 40_000_000_000
    limit = max(1000, int(rate * one_way_s / 8 / 1500 * 2) + 1000)
    # pyroute2 takes delay and jitter in microseconds, loss in percent
    return {"delay": int(delay / 4 * 1000), "jitter": int(jitter / 4 * 1000), "loss": loss, "limit": limit}


def tbf_args(shape: Any) -> dict[str, Any] | None:
    if not shape.rate:
        return None
    bytes_s = shape.rate // 8  # pyroute2 reads an integer rate as bytes/s
    burst = max(2 * GSO_MAX, bytes_s // 250)  # at least a tick's worth at HZ=250
    return {"rate": bytes_s, "burst": burst, "limit": int(burst + bytes_s * QUEUE_SECONDS)}


def apply(ipr: IPRoute | NetNS, ifname: str, shape: Any) -> None:
    """Replace the root qdisc of ifname (in the namespace ipr talks to) with the shape's
    (or the default qdisc when shape asks for nothing): netem, then tbf as its child."""
    index = _index(ipr, ifname)
    clear(ipr, index)
    if not shaped(shape):
        return
    netem, tbf = netem_args(shape), tbf_args(shape)
    if netem is not None:
        _netem(ipr, index, ifname, netem)
    if tbf is not None:
        try:
            ipr.tc("add", "tbf", index=index, handle=TBF, **({"parent": NETEM_CLASS} if netem is not None else {}), **tbf)
        except NetlinkError as e:
            raise NettuneError(f"lab: adding tbf on {ifname} failed ({e.args[1] if len(e.args) > 1 else e}); is sch_tbf in this kernel?") from None


def _index(ipr: IPRoute | NetNS, ifname: str) -> int:
    idx = ipr.link_lookup(ifname=ifname)
    if not idx:
        raise NettuneError(f"lab: link {ifname} is missing; run `nettune lab down` and retry")
    return int(idx[0])


def _netem(ipr: IPRoute | NetNS, index: int, ifname: str, netem: dict[str, Any]) -> None:
    try:
        ipr.tc("add", "netem", index=index, handle=NETEM, **netem)
    except NetlinkError as e:
        if e.code == errno.ENOENT:  # "unknown qdisc kind": built without it
            raise NettuneError(NO_NETEM) from None
        raise NettuneError(f"lab: adding netem on {ifname} failed ({e.args[1] if len(e.args) > 1 else e})") from None


def clear(ipr: IPRoute | NetNS, index: int) -> None:
    try:
        ipr.tc("del", index=index, handle=0, parent=ROOT)
    except NetlinkError:
        pass  # no root qdisc of ours: the default is in place


def qdiscs(ipr: IPRoute | NetNS, ifname: str) -> list[dict[str, Any]]:
    """The qdiscs on ifname as {kind, handle, parent} (read back from netlink)."""
    idx = ipr.link_lookup(ifname=ifname)
    if not idx:
        return []
    out = []
    for q in ipr.get_qdiscs(index=idx[0]):
        out.append({"kind": q.get_attr("TCA_KIND"), "handle": q["handle"], "parent": q["parent"]})
    return out


_LINK = HTB | 0x1
_SENDER = 0x100
_MAX_RATE = 34_000_000_000  # no rate on the receiver's side: tbf's ceiling (a veth never reaches it)
_ETH_P_IP = 0x0800  # a u32 filter's protocol: an ethertype
_QUANTUM = 200_000  # bytes per round (the kernel's upper bound; its default from r2q is too big at these rates)


def apply_switch_end(ipr: IPRoute | NetNS, ifname: str, shape: Any, senders: list[tuple[str, Any]]) -> None:
    """The switch end of a host's link (towards the host): its netem, and with any rate
    the htb of the module's docstring. shape: the receiving host's (None: unshaped);
    senders: (address, shape or None) of every other lab host."""
    index = _index(ipr, ifname)
    clear(ipr, index)
    rate_d = shape.rate if shape is not None and shape.rate else None
    pairs = [(addr, min(r for r in (s.rate if s is not None else None, rate_d) if r)) for addr, s in senders
             if (s is not None and s.rate) or rate_d]
    netem = netem_args(shape) if shape is not None else None
    if netem is not None:
        _netem(ipr, index, ifname, netem)
    if not pairs:
        return
    try:
        ipr.tc("add", "htb", index=index, handle=HTB, default=0, **({"parent": NETEM_CLASS} if netem is not None else {}))
        link = rate_d or _MAX_RATE
        ipr.tc("add-class", "htb", index=index, handle=_LINK, parent=HTB, **_htb_rate(link, link))
        for i, (addr, rate) in enumerate(pairs):
            leaf = HTB | (_SENDER + i)
            ipr.tc("add-class", "htb", index=index, handle=leaf, parent=_LINK, **_htb_rate(rate, link))
            ipr.tc("add", "tbf", index=index, handle=(0x100 + i) << 16, parent=leaf, **(tbf_args(_Rate(rate)) or {}))
            ipr.tc("add-filter", "u32", index=index, parent=HTB, prio=10, protocol=_ETH_P_IP, target=leaf,
                   keys=[f"0x{int(ipaddress.ip_address(addr)):08x}/0xffffffff+12"])  # the sender's address
    except NetlinkError as e:
        raise NettuneError(f"lab: shaping {ifname} failed ({e.args[1] if len(e.args) > 1 else e}); are sch_htb, sch_tbf and "
                           "cls_u32 in this kernel?") from None


def _htb_rate(rate: int, ceil: int) -> dict[str, int]:
    """An htb class's rate and ceiling (bit/s -> bytes/s), with bursts that pass a 64 KiB GSO packet."""
    burst = max(2 * GSO_MAX, rate // 8 // 250)
    return {"rate": rate // 8, "ceil": ceil // 8, "burst": burst, "cburst": max(burst, ceil // 8 // 250), "quantum": _QUANTUM}


class _Rate:
    """Just a rate, as tbf_args reads a shape."""

    def __init__(self, rate: int):
        self.rate = rate


def without_rate(shape: Any) -> Any:
    """What a host's own end keeps: the shape without its rate (None when nothing is left)."""
    if shape is None:
        return None
    rest = shape.model_copy(update={"rate": None})
    return rest if shaped(rest) else None
