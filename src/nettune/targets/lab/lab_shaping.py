"""Shaping of the lab's links with tc (tbf for the rate, netem for delay, jitter and loss),
through pyroute2's tc API; nothing is read back by parsing `tc` output.

A link is a veth pair; each end's egress is one direction, so both ends are shaped. The
spec's delay is a round-trip time of which a link carries half (two hosts' links make the
path), so each end gets a quarter; jitter is split the same way; loss and rate apply as
given to each direction. netem is the root qdisc and tbf its child, so packets are
delayed, then paced at the rate through tbf's queue (the link's bottleneck buffer).
"""
from __future__ import annotations

import errno
from typing import Any

from pyroute2 import IPRoute, NetNS
from pyroute2.netlink.exceptions import NetlinkError

from ...errors import NettuneError

ROOT = 0xFFFFFFFF
NETEM = 0x10000   # 1:
NETEM_CLASS = 0x10001  # 1:1, where netem's child goes
TBF = 0x20000     # 2:
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
    (or the default qdisc when shape asks for nothing)."""
    idx = ipr.link_lookup(ifname=ifname)
    if not idx:
        raise NettuneError(f"lab: link {ifname} is missing; run `nettune lab down` and retry")
    index = idx[0]
    clear(ipr, index)
    if not shaped(shape):
        return
    netem, tbf = netem_args(shape), tbf_args(shape)
    if netem is not None:
        try:
            ipr.tc("add", "netem", index=index, handle=NETEM, **netem)
        except NetlinkError as e:
            if e.code == errno.ENOENT:  # "unknown qdisc kind": built without it
                raise NettuneError(NO_NETEM) from None
            raise NettuneError(f"lab: adding netem on {ifname} failed ({e.args[1] if len(e.args) > 1 else e})") from None
    if tbf is not None:
        try:
            ipr.tc("add", "tbf", index=index, handle=TBF, **({"parent": NETEM_CLASS} if netem is not None else {}), **tbf)
        except NetlinkError as e:
            raise NettuneError(f"lab: adding tbf on {ifname} failed ({e.args[1] if len(e.args) > 1 else e}); is sch_tbf in this kernel?") from None


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
