"""The lab's path for `nettune ceiling LAB-STUDY.toml`: a lab of its own with the study's
server and client, at the first point's MTU and queues, no shaping, no nodes, no knobs;
removed afterwards. Its class ("lab mtu=N queues=Q") is what analysis/ceilings.py matches
a lab study's points against."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from ...plan.points import expand_and_check
from ...studyfile.models import Study
from ..target_kind import CeilingPath
from .lab import LabTarget


def lab_path_class(mtu: Any, queues: Any) -> str:
    return f"lab mtu={mtu} queues={queues or 1}"


@contextmanager
def ceiling_lab(study: Study) -> Iterator[CeilingPath]:
    first = expand_and_check(study)[0]
    wl = first.workload
    server, client = (wl.server, wl.client) if wl.pairs is None else tuple(study.target.test_hosts[:2])
    mtu, queues = first.target.mtu, first.target.queues
    own = Study.model_validate({"name": f"{study.name[:58]}-ceil", "target": {"kind": "lab", "hosts": [server, client], "mtu": mtu,
                                                                          "queues": queues},
                                "workload": {"server": server, "client": client}})
    target = LabTarget(own)
    try:
        target.prepare(expand_and_check(own)[0])
        yield CeilingPath(target, target.hosts[server], target.hosts[client], lab_path_class(mtu, queues),
                          f"lab of {study.name} ({server} -> {client}, mtu {mtu}, {queues} queue(s))")
    finally:
        target.close()
