"""ring[:rx|tx|rx-mini|rx-jumbo][@DEV] = N  (NIC descriptor ring sizes, ethtool -g / -G)

"ring" = N sets rx and tx. Virtual devices (veth) usually have no rings: validation
says so instead of failing later.
"""
from __future__ import annotations

from typing import Any

from ..base import Loc, catalog_row
from .channels import Channels


class Ring(Channels):
    name = "ring"
    tool_read, tool_set, what = "-g", "-G", "ring sizes"
    types = ("rx", "tx", "rx-mini", "rx-jumbo")
    default_types = ("rx", "tx")
    persist_types = ("rx", "tx")
    bounded_by_lab_queues = False

    def commands(self, loc: Loc, value: Any) -> list[str]:
        from .channels import as_dict

        v = as_dict(value)
        args = " ".join(f"{t} {n}" for t, n in v.items()) if isinstance(v, dict) else " ".join(f"{t} {v}" for t in ([loc.arg] if loc.arg else ["rx", "tx"]))
        return [f"ethtool -G {loc.device or '$IFACE'} {args}"]

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "ring", '"ring" = 4096  ("ring:rx", "ring:tx")', "interface", "descriptors per NIC queue", "driver default",
            "the maximum (ethtool -g)", "no, but the NIC may reset its queues", "memory; latency", "iflib override_nrxds/ntxds (loader.conf)",
        )]
