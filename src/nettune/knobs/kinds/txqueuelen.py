"""txqueuelen[@DEV] = 10000: packets queued by the qdisc of an interface (`ip link`)."""
from __future__ import annotations

from typing import Any

from ...targets.base import Host
from ..base import Ctx, Kind, Loc, Persisted, catalog_row, need_device, read_file, run_ok, whole


class TxQueueLen(Kind):
    name = "txqueuelen"
    takes_arg = "never"
    needs_device = True

    def parse(self, loc: Loc, raw: Any) -> int:
        return whole(loc, raw, 0, 2**32 - 1)

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        need_device(ex, loc)
        self.read(ex, loc)

    def read(self, ex: Host, loc: Loc) -> int:
        return int(read_file(ex, f"/sys/class/net/{loc.device}/tx_queue_len", loc.key).strip())

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        run_ok(ex, ["ip", "link", "set", "dev", loc.device or "", "txqueuelen", str(value)], loc.key)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        return [f"ip link set dev {loc.device or '$IFACE'} txqueuelen {value}"]

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        return Persisted(shell=self.commands(loc, value), tuned_net={"txqueuelen": [str(value)]}, udev=[f'ATTR{{tx_queue_len}}="{value}"'])

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "txqueuelen", '"txqueuelen" = 10000', "interface", "packets the qdisc queues before dropping", "1000",
            "raise on the VM host [fasterdata]", "no", "bufferbloat (latency)", "n/a",
        )]
