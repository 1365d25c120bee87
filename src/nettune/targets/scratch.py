"""Scratch namespaces: throw-away stand-ins for hosts that will live in namespaces, so a
knob is checked before anything real exists (Target.scratch of the lab and local targets).

They are named nettune-probe-<pid>[-HOST]: `nettune lab down` (and a resumed run) remove
one a killed run left behind.
"""
from __future__ import annotations

import os
from contextlib import ExitStack, contextmanager
from typing import Iterable, Iterator

from .base import Host, Scratch
from .lab.lab_host import LabHost
from .procs import run_local

SPARE_DEV = "ntscratch0"  # the scratch namespace's spare veth, to try settings on (qdiscs)
SCRATCH_PREFIX = "nettune-probe-"


def scratch_namespace(pid: int | str) -> str:
    """The scratch namespace the process `pid` makes (its per-host ones add "-HOST")."""
    return f"{SCRATCH_PREFIX}{pid}"


@contextmanager
def scratch_namespaces(interfaces: dict[str, str], queues: int = 1, each: bool = False) -> Iterator[Scratch | None]:
    """Stand-ins for hosts that will live in namespaces: host name -> the interface its
    stand-in gets (named like the real one, `queues` queues). each=False: one namespace for
    all of them; each=True: one per host. None when not root or nothing could be created."""
    if os.geteuid() != 0:
        yield None
        return
    base = scratch_namespace(os.getpid())
    groups = [(f"{base}-{n}", {n: dev}) for n, dev in interfaces.items()] if each else [(base, interfaces)]
    with ExitStack() as stack:
        hosts: dict[str, Host] = {}
        spare: Host | None = None
        for netns, group in groups:
            if not stack.enter_context(_namespace(netns, group.values(), queues)):
                continue
            hosts |= {n: LabHost(n, netns, "", dev) for n, dev in group.items()}
            spare = spare or LabHost("probe", netns, "", SPARE_DEV)
        yield Scratch(hosts, spare, SPARE_DEV) if spare is not None else None


@contextmanager
def _namespace(name: str, devices: Iterable[str], queues: int) -> Iterator[bool]:
    """A fresh namespace holding a veth pair per device plus the spare; removed after."""
    run_local(["ip", "netns", "del", name], 10)
    if run_local(["ip", "netns", "add", name], 10).returncode != 0:
        yield False
        return
    try:
        q = str(max(1, queues))
        pairs = [(dev, f"ntpp{i}") for i, dev in enumerate(devices)] + [(SPARE_DEV, "ntscratch1")]
        for a, b in pairs:
            run_local(["ip", "-n", name, "link", "add", a, "numtxqueues", q, "numrxqueues", q, "type", "veth", "peer", "name", b, "numtxqueues", q, "numrxqueues", q], 10)
            for dev in (a, b):
                run_local(["ip", "-n", name, "link", "set", dev, "up"], 10)
        yield True
    finally:
        run_local(["ip", "netns", "del", name], 10)
