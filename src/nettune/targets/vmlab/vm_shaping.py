"""Link shaping on VM lab guests (and reading their NICs' queue counts), made by each guest's own kernel (netem, tbf) with `tc`
over SSH: this machine's kernel may lack netem, a Debian guest kernel has it.

Only a guest's egress (eth0's root qdisc) is shaped: each direction of a path between two
guests is delayed once, by the sender. So a link's round-trip `delay` is split as half per
guest (between two guests with the same delay, ping shows that delay; in general the mean
of their links' delays, as on the namespace lab), jitter likewise; `loss` applies to what
the guest sends; `rate` (tbf under netem, as on the namespace lab) paces what the guest
sends, so traffic towards a guest is limited by its sender's rate.
"""
from __future__ import annotations

from typing import Any

from ...errors import NettuneError
from ..lab.lab_shaping import tbf_args
from .guest_files import GUEST_IF


def shape_argv(shape: Any) -> list[list[str]]:
    """The tc commands that give eth0 this shape (a LinkShape; empty: the default qdisc)."""
    delay, jitter, loss = shape.delay or 0.0, shape.jitter or 0.0, shape.loss or 0.0
    tbf = tbf_args(shape) if shape.rate else None
    out: list[list[str]] = []
    if delay or jitter or loss:
        one_way_s = delay / 2 / 1000
        limit = max(1000, int((shape.rate or 10_000_000_000) * one_way_s / 8 / 1500 * 2) + 1000)
        netem = ["tc", "qdisc", "replace", "dev", GUEST_IF, "root", "handle", "1:", "netem", "limit", str(limit)]
        if delay or jitter:
            netem += ["delay", f"{delay / 2 * 1000:.0f}us"] + ([f"{jitter / 2 * 1000:.0f}us"] if jitter else [])
        if loss:
            netem += ["loss", f"{loss:g}%"]
        out.append(netem)
    if tbf is not None:
        where = ["parent", "1:1", "handle", "2:"] if out else ["root", "handle", "2:"]
        out.append(["tc", "qdisc", "add" if out else "replace", "dev", GUEST_IF, *where, "tbf", "rate", f"{tbf['rate'] * 8}bit",
                    "burst", str(tbf["burst"]), "limit", str(tbf["limit"])])
    return out


def clear(host: Any) -> None:
    """The guest's default qdisc back (nothing to delete is not an error)."""
    host.run(["sh", "-c", f"tc qdisc del dev {GUEST_IF} root 2>/dev/null; true"], timeout=30)


def apply(host: Any, shape: Any) -> None:
    clear(host)
    for argv in shape_argv(shape):
        r = host.run(argv, timeout=30)
        if r.returncode != 0:
            raise NettuneError(f"VM lab: shaping {host.name}'s link failed (`{' '.join(argv)}`): {r.said()}")


def shown(host: Any) -> str:
    """`tc qdisc show dev eth0` in the guest, as stored with each run (read, not parsed)."""
    r = host.run(["tc", "qdisc", "show", "dev", GUEST_IF], timeout=30)
    return " | ".join(ln.strip() for ln in r.stdout.splitlines() if ln.strip())


def channels(host: Any) -> dict[str, int | None]:
    """The guest's own view of its NIC's queues: `ethtool -l eth0`'s Combined lines (the
    first under "Pre-set maximums", what the hypervisor gave; the second under "Current
    hardware settings", what the guest's driver uses). None: not reported."""
    r = host.run(["ethtool", "-l", GUEST_IF], timeout=30)
    combined = [ln.split(":", 1)[1].strip() for ln in r.stdout.splitlines() if ln.strip().lower().startswith("combined:")]
    nums = [int(v) if v.isdigit() else None for v in combined]
    return {"combined_max": nums[0] if nums else None, "combined": nums[1] if len(nums) > 1 else None}
