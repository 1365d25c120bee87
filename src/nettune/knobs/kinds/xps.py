"""xps[:QUEUE][@DEV] = "MASK"  (Transmit Packet Steering: which CPUs use a transmit queue)

Same form as rps, written to /sys/class/net/DEV/queues/tx-N/xps_cpus.
"""
from __future__ import annotations

from ..base import catalog_row
from .rps import Rps


class Xps(Rps):
    name = "xps"
    prefix, file = "tx", "xps_cpus"

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "xps", '"xps" = "1"  ("xps:0" for queue 0)', "interface", "CPUs that send on a transmit queue (hex mask)",
            "set by the driver", "one queue per CPU", "no", "misrouted traffic adds latency", "n/a",
        )]
