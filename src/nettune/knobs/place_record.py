"""A place: where a knob's value lives (a lab namespace, this machine, a remote host), as
the journal records it. places.py finds the place of a knob and rebuilds one from the
journal; this module holds only the record, so the boot-time machinery (boot_batch.py),
which the knob kinds import, can name it without importing the knob registry."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..targets.base import Host

NETNS_DIR = "/run/netns"


def netns_ino(name: str) -> int | None:
    try:
        return os.stat(f"{NETNS_DIR}/{name}").st_ino
    except OSError:
        return None


@dataclass
class Place:
    label: str  # shown to the user and used in settings: a host name, or "machine"
    type: str  # "netns" | "machine" | "remote"
    ex: Host
    netns: str | None = None
    ino: int | None = None

    @property
    def key(self) -> str:
        return {"netns": f"netns:{self.netns}", "machine": "machine"}.get(self.type, f"remote:{self.label}")

    def record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {"type": self.type, "label": self.label, "key": self.key}
        if self.type == "netns":
            rec |= {"netns": self.netns, "ino": self.ino}
        if self.type == "remote":
            rec["address"] = self.ex.address
            rec["reach"] = self.ex.reach()
        return rec

    def gone(self) -> str | None:
        """Why this place no longer exists (None while it does)."""
        if self.type != "netns" or not self.netns:
            return None
        ino = netns_ino(self.netns)
        if ino is None:
            return f"namespace {self.netns} no longer exists (the lab was removed)"
        if self.ino is not None and ino != self.ino:
            return f"namespace {self.netns} was re-created since"
        return None
