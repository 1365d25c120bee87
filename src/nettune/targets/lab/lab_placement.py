"""Where a point puts the lab's hosts on its nodes: `[target] placement` moves the
workload's client onto its server's node ("same-node") or off it ("cross-node"), as a
Kubernetes study places the client pod with affinity or anti-affinity."""
from __future__ import annotations

from typing import Any

from ...errors import NettuneError


def nodes_for(spec: Any, workload: Any) -> dict[str, list[str]] | None:
    """The nodes and their hosts at this point (None: a lab without nodes)."""
    if spec.nodes is None:
        return None
    nodes = {n: list(hs) for n, hs in spec.nodes.items()}
    if spec.placement is None:
        return nodes
    if workload.pairs is not None:
        raise NettuneError("lab: [target] placement moves the workload's client next to or away from its server; "
                           "with [workload] pairs, place the hosts with nodes instead")
    home, at = _node(nodes, workload.server), _node(nodes, workload.client)
    if spec.placement == "same-node":
        want = home
    else:
        want = at if at != home else next(n for n in nodes if n != home)
    nodes[at].remove(workload.client)
    nodes[want].append(workload.client)
    return nodes


def moves(have: dict[str, list[str]] | None, want: dict[str, list[str]] | None) -> list[tuple[str, str]]:
    """(host, new node) for every host whose node differs between two placements."""
    if not have or not want:
        return []
    now = {h: n for n, hs in have.items() for h in hs}
    return [(h, n) for n, hs in want.items() for h in hs if now.get(h) != n]


def _node(nodes: dict[str, list[str]], host: str) -> str:
    return next(n for n, hs in nodes.items() if host in hs)
