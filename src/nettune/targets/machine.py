"""This machine as hosts, for the layers that change settings (knobs) without a target.

A host-wide value of a lab study lives on this machine, not in a host's namespace; a
journal record names a namespace after the run that wrote it has gone; a knob is checked
before the lab exists. These functions and Target.scratch give the knobs layer hosts for
those cases, so it never builds a target's host class itself.

Scratch namespaces are named nettune-probe-<pid>[-HOST]: `nettune lab down` (and a
resumed run) remove one a killed run left behind.
"""
from __future__ import annotations

import os
from contextlib import ExitStack, contextmanager
from typing import Iterable, Iterator

from .base import Host, Scratch
from .procs import run_local

SPARE_DEV = "ntscratch0"  # the scratch namespace's spare veth, to try settings on (qdiscs)
SCRATCH_PREFIX = "nettune-probe-"


def scratch_namespace(pid: int | str) -> str:
    """The scratch namespace the process `pid` makes (its per-host ones add "-HOST")."""
    return f"{SCRATCH_PREFIX}{pid}"


def machine_host(name: str = "machine") -> Host:
    """This machine, outside any network namespace."""
    from .local import LocalHost

    return LocalHost(name)


def namespace_host(name: str, netns: str, interface: str = "") -> Host:
    """A named network namespace of this machine (one nettune created)."""
    from .lab.lab import LabHost

    return LabHost(name, netns, "", interface)


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
            hosts |= {n: namespace_host(n, netns, dev) for n, dev in group.items()}
            spare = spare or namespace_host("probe", netns, SPARE_DEV)
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
