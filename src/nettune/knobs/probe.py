"""A throw-away network namespace to validate knobs before the lab (or anything) exists.

It holds one veth per lab host, named like the host's real lab interface and with as
many queues as the study's largest point, plus a spare veth for trying qdiscs. Fresh
namespaces have the same per-namespace sysctls as the lab's, so scope detection
(namespace or host-wide) and every device check give the answers the real run will get.
Named nettune-probe-<pid>: `nettune lab down` removes one a killed run left behind.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Iterator

from ..targets.procs import run_local

SCRATCH_DEV = "ntscratch0"


@contextmanager
def probe_namespace(interfaces: list[str], queues: int = 1, suffix: str = "") -> Iterator[Any]:
    """Yield a LabHost for the probe namespace (None when not root)."""
    if os.geteuid() != 0:
        yield None
        return
    from ..targets.lab import LabHost

    name = f"nettune-probe-{os.getpid()}{suffix}"
    run_local(["ip", "netns", "del", name], 10)
    r = run_local(["ip", "netns", "add", name], 10)
    if r.returncode != 0:
        yield None
        return
    try:
        q = str(max(1, queues))
        pairs = [(dev, f"ntpp{i}") for i, dev in enumerate(interfaces)] + [(SCRATCH_DEV, "ntscratch1")]
        for a, b in pairs:
            run_local(["ip", "-n", name, "link", "add", a, "numtxqueues", q, "numrxqueues", q, "type", "veth", "peer", "name", b, "numtxqueues", q, "numrxqueues", q], 10)
            for dev in (a, b):
                run_local(["ip", "-n", name, "link", "set", dev, "up"], 10)
        yield LabHost("probe", name, "", SCRATCH_DEV)
    finally:
        run_local(["ip", "netns", "del", name], 10)
