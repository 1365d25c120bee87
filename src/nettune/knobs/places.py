"""Where a knob's value lives: a lab namespace, this machine, or a remote host.

A place is recorded in the journal with what identifies it beyond its name (the inode
of a named network namespace, the ifindex of an interface), so a restore never writes an
old value into a namespace or interface that was re-created since: a value that lived in
a namespace that is gone needs no restore, and `nettune restore` says so. A remote place
records how to reach its host again (`reach`: address, port, user, key, known_hosts,
sudo, connect timeout and the host key seen), so `nettune restore` reconnects without
the study file and only to that same host (remote.py).
"""
from __future__ import annotations

from typing import Any

from ..targets.base import Host
from ..targets.machine import machine_host, namespace_host
from .base import KnobError, Loc, cpu_count, ifindex
from .place_record import NETNS_DIR as NETNS_DIR, Place as Place, netns_ino as netns_ino
from .registry import KINDS

_machine: Place | None = None


def machine() -> Place:
    global _machine
    if _machine is None:
        _machine = Place("machine", "machine", machine_host())
    return _machine


class CpuCounts:
    """CPU count per place (a lab namespace sees the machine's CPUs; a remote host its own)."""

    def __init__(self) -> None:
        self._n: dict[str, int] = {}

    def __call__(self, place: Place) -> int:
        key = "machine" if place.type != "remote" else place.key
        if key not in self._n:
            self._n[key] = cpu_count(place.ex if place.type == "remote" else machine().ex)
        return self._n[key]


def place_for(host: Host, scope: str) -> Place:
    """The place a knob of `scope` ("ns" or "machine") on `host` acts on."""
    if host.netns:
        if scope == "machine":
            return machine()
        return Place(host.name, "netns", host, host.netns, netns_ino(host.netns))
    if host.on_this_machine:  # this machine outside a namespace: its settings are the machine's
        return Place("machine", "machine", host)
    return Place(host.name, "remote", host)  # reached again through host.reach()


def place_from_record(rec: dict[str, Any], remote: Any = None) -> tuple[Place | None, str]:
    """Rebuild a place from the journal (for `nettune restore` in a new process).
    (None, why) when it no longer exists; KnobError when it exists but is out of reach.
    Remote places are reconnected by `remote` (a remote.RemotePlaces)."""
    t = rec.get("type")
    if t == "machine":
        return machine(), ""
    if t == "netns":
        p = Place(rec.get("label", "?"), "netns", namespace_host(rec.get("label", "?"), rec["netns"]), rec["netns"], rec.get("ino"))
        why = p.gone()
        return (None, why) if why else (p, "")
    if remote is not None:
        return remote.place(rec), ""
    # not "gone": the value is still changed over there; keep it pending
    raise KnobError(f"{rec.get('label')} ({rec.get('address')}) is a remote host and no connection was offered")


def identity(place: Place, loc: Loc) -> dict[str, Any]:
    """What must still match at restore time: the interface's ifindex."""
    if loc.device and KINDS[loc.kind].acts_on_interface(loc):
        idx = ifindex(place.ex, loc.device)
        return {"ifindex": idx} if idx is not None else {}
    return {}


def ident_changed(place: Place, loc: Loc, ident: dict[str, Any]) -> str | None:
    want = ident.get("ifindex")
    if want is None or not loc.device:
        return None
    now = ifindex(place.ex, loc.device)
    if now is None:
        return f"interface {loc.device} no longer exists"
    if now != want:
        return f"interface {loc.device} was re-created since (its settings started over from defaults)"
    return None
