"""Reaching remote hosts again from what the knob journal recorded, without the study file.

Host.reach() gives what a journal record keeps of a host that is not this machine; the
target kind whose hosts write such records (TargetKind.reaches: an ssh host, a cluster's
node, the sandbox's test trees) reaches it again (TargetKind.reconnector), once per host
for as long as the restore is open. Which kind that is, only the kinds themselves say.
"""
from __future__ import annotations

from typing import Any

from . import TARGETS
from .base import Host
from .target_kind import HostReconnector


class NoWayToReach(Exception):
    """The journal's record of a host does not say how to reach it (an older nettune wrote it)."""


class Reconnector:
    def __init__(self) -> None:
        self._open: dict[str, HostReconnector] = {}  # target kind -> its reconnector, made on first use

    def host(self, label: str, reach: dict[str, Any]) -> Host:
        """The host `reach` describes, connected. NoWayToReach: the record does not say how
        to reach it; ValueError/KeyError: the record is unusable (a journal edited by hand);
        ConnectionError: refused key, unreachable, sudo broken."""
        kind = next((k for k in TARGETS.values() if k.reaches(reach)), None)
        if kind is None:
            raise NoWayToReach("the journal does not say how to reach it (written by an older nettune)")
        if kind.name not in self._open:
            self._open[kind.name] = kind.reconnector()
        return self._open[kind.name].host(label, reach)

    def close(self) -> None:
        for r in self._open.values():
            r.close()
        self._open.clear()
