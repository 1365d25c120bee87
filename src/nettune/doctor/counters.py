"""Counters experts read first, each read twice for its trend (INTERVAL apart, live or as
a capture recorded them; a sosreport has one read, so whether a count still rises cannot
be told): softnet drops and time squeeze per CPU, and the NIC's error and drop counters.

Sources of truth: /proc/net/softnet_stat (net/core/net-procfs.c: per CPU, hex: processed,
dropped = the per-CPU backlog was full (netdev_max_backlog), time_squeeze = net_rx_action
stopped with work left (netdev_budget / netdev_budget_usecs)); the link statistics of
Documentation/ABI/testing/sysfs-class-net-statistics (the same rtnl_link_stats64 `ip -s
link` prints; read from sysfs, which every host kind can read, or /proc/net/dev, or a
capture's `ip -s link` text) and the driver's own `ethtool -S` counters.
"""
from __future__ import annotations

import re

from .base import Check, Finding, HostView, cannot
from .link import NET, ip_text
from .parsers import ethtool_stats, proc_net_dev, softnet
from .sources import Got

SOFTNET = "/proc/net/softnet_stat"
# counter name patterns (sysfs names and drivers' ethtool -S names) -> what they mean
PHYSICAL = re.compile(r"crc|align|symbol|fcs|frame_err|code_err|length_err|rx_jabber|rx_undersize|rx_oversize_err")
OVERFLOW = re.compile(r"missed|no_buffer|no_dma|fifo|over_err|overrun|out_of_buffer|discards|nobuf|buffer_overflow|rx_over")
TXERR = re.compile(r"^tx_(aborted|carrier|heartbeat|window|timeout)|collisions$|tx_timeout")
DROPPED = re.compile(r"dropped")


class Softnet(Check):
    id, title, per_machine = "net.softnet", "softnet drops and time squeeze per CPU", True
    source = "/proc/net/softnet_stat, read twice"

    def prepare(self, h: HostView) -> None:
        h.sample(SOFTNET)

    def run(self, h: HostView) -> list[Finding]:
        a = h.sample(SOFTNET)
        if not a.known or a.text is None:
            return [cannot(self.id, h.name, "whether the per-CPU backlog drops packets", a)]
        rows, indexed = softnet(a.text)
        if not rows:
            return [cannot(self.id, h.name, "softnet drops", f"{a.where}: no rows it could read")]
        b = h.again(SOFTNET)
        later = softnet(b.text)[0] if b.text else None
        label = "CPU" if indexed else "row"
        drops = {r.cpu: r.dropped for r in rows if r.dropped}
        squeeze = {r.cpu: r.squeezed for r in rows if r.squeezed}
        processed = sum(r.processed for r in rows)
        ev = (f"{a.where}: {len(rows)} {label}s, processed {processed}, dropped {sum(drops.values())}"
              + (f" ({', '.join(f'{label}{c} {n}' for c, n in sorted(drops.items())[:8])})" if drops else "")
              + f", time_squeeze {sum(squeeze.values())}" + (f" ({', '.join(f'{label}{c} {n}' for c, n in sorted(squeeze.items())[:8])})" if squeeze else ""))
        d_drop = d_sq = None
        if later is not None and len(later) == len(rows):
            d_drop = sum(x.dropped - y.dropped for x, y in zip(later, rows))
            d_sq = sum(x.squeezed - y.squeezed for x, y in zip(later, rows))
            ev += f"; read again: +{d_drop} dropped, +{d_sq} squeezed"
        trend = "" if later is not None else " (one read: whether it still rises cannot be told)"
        out = []
        if d_drop:
            out.append(Finding(self.id, h.name, "problem", f"the per-CPU backlog is dropping packets now: +{d_drop} in the interval", ev, DROP_WHY, DROP_FIX, ""))
        elif drops:
            out.append(Finding(self.id, h.name, "warn", f"{sum(drops.values())} packets dropped by the per-CPU backlog since boot"
                               + (" (none in the interval)" if later is not None else trend), ev, DROP_WHY, DROP_FIX, ""))
        if d_sq:
            out.append(Finding(self.id, h.name, "warn", f"time squeeze rising: +{d_sq} in the interval", ev, SQUEEZE_WHY, SQUEEZE_FIX, ""))
        elif squeeze and processed and sum(squeeze.values()) / processed > 0.001:
            out.append(Finding(self.id, h.name, "warn", f"time squeeze {sum(squeeze.values())} for {processed} packets since boot{trend}", ev, SQUEEZE_WHY, SQUEEZE_FIX, ""))
        if not out:
            seen = "no softnet drops" + (f"; time squeeze {sum(squeeze.values())} for {processed} packets since boot (a trace, not a limit)" if squeeze else ", no time squeeze")
            out.append(Finding(self.id, h.name, "info", seen, ev))
        return out


DROP_WHY = ("a packet arriving for a CPU whose backlog (netdev_max_backlog) is full is dropped before TCP sees it: "
            "it matters for traffic queued per CPU (RPS, veth, tunnels, non-NAPI drivers)")
DROP_FIX = "raise net.core.netdev_max_backlog (net.backlog can do it: --fix net.backlog), and spread the receive work (RPS, more queues, IRQs on more CPUs)"
SQUEEZE_WHY = "the receive softirq ran out of budget with packets left: under load they wait for the next round (latency, then drops)"
SQUEEZE_FIX = "sysctl -w net.core.netdev_budget=600 net.core.netdev_budget_usecs=4000, and spread the receive work over more CPUs"


class NicErrors(Check):
    id, title = "nic.errors", "NIC error and drop counters, and their trend"
    source = "/sys/class/net/IF/statistics/* (else /proc/net/dev, or a capture's ip -s link), ethtool -S IF; each read twice"

    def _stats_pattern(self, dev: str) -> str:
        return f"{NET}{dev}/statistics/*"

    def prepare(self, h: HostView) -> None:
        if h.interface:
            h.sample_files(self._stats_pattern(h.interface))
            h.sample_cmd(["ethtool", "-S", h.interface])

    def _link_stats(self, h: HostView, dev: str, again: bool) -> tuple[dict[str, int] | None, str, list[Got]]:
        pat = self._stats_pattern(dev)
        f = h.again_files(pat) if again else h.sample_files(pat)
        if f.known and f.texts:
            return {p.rsplit("/", 1)[1]: int(v) for p, v in f.texts.items() if v.isdigit()}, f.where, []
        if again:
            return None, "", []
        g = h.get("/proc/net/dev")
        if g.text and dev in proc_net_dev(g.text):
            return proc_net_dev(g.text)[dev], g.where, []
        link = ip_text(h).get(dev)
        if link is not None and link.stats:
            return link.stats, "ip -s link (capture)", []
        return None, "", [g]

    def run(self, h: HostView) -> list[Finding]:
        dev = h.interface
        if not dev:
            return [self.no_interface(h)]
        stats, where, gone = self._link_stats(h, dev, False)
        eth = h.sample_cmd(["ethtool", "-S", dev])
        drv = ethtool_stats(eth.stdout) if eth.known and eth.ok else {}
        if stats is None and not drv:
            f = h.files(self._stats_pattern(dev))
            return [cannot(self.id, h.name, f"{dev}'s error and drop counters", f, *gone, eth)]
        now = dict(stats or {})
        now.update({f"ethtool:{k}": v for k, v in drv.items()})
        later_stats = self._link_stats(h, dev, True)[0] if stats is not None else None
        eth2 = h.again_cmd(["ethtool", "-S", dev]) if drv else None
        later: dict[str, int] | None = None
        if later_stats is not None or (eth2 is not None and eth2.known):
            later = dict(later_stats or {})
            if eth2 is not None and eth2.known:
                later.update({f"ethtool:{k}": v for k, v in ethtool_stats(eth2.stdout).items()})
        rising = {k: later[k] - v for k, v in now.items() if later is not None and k in later and later[k] > v}
        srcs = ", ".join(x for x in (where, eth.where if drv else "") if x)
        groups = [("physical-layer errors (CRC, alignment, symbol)", PHYSICAL, "problem", "warn",
                   "frames corrupted on the wire: a cable, transceiver/optic or port is failing",
                   "replace/reseat the cable and transceiver, try another switch port; watch rx_crc_errors"),
                  ("transmit errors", TXERR, "problem", "warn", "frames the NIC could not send (carrier lost, aborted, timed out)",
                   "check the link (nic.link) and the kernel log (nic.hangs)"),
                  ("receive overflows (ring or FIFO full)", OVERFLOW, "warn", "info",
                   "the NIC had no free receive descriptor: bursts faster than the CPUs empty the ring",
                   "larger RX ring (nic.rings), more queues/CPUs for its interrupts (nic.channels, nic.irq)")]
        out = []
        for label, pat, sev_rising, sev_past, why, fix in groups:
            names = sorted(k for k, v in now.items() if v and pat.search(k.removeprefix("ethtool:")) and not DROPPED.search(k.removeprefix("ethtool:")))
            if not names:
                continue
            shown = ", ".join(f"{k.removeprefix('ethtool:')} {now[k]}" + (f" (+{rising[k]})" if k in rising else "") for k in names[:6])
            up = [k for k in names if k in rising]
            if up:
                out.append(Finding(self.id, h.name, sev_rising, f"{dev}: {label} rising: {shown}", f"{srcs}: {shown}; read twice", why, fix, ""))
            else:
                when = " (not rising in the interval)" if later is not None else " (one read: whether they still rise cannot be told)"
                out.append(Finding(self.id, h.name, sev_past, f"{dev}: {label} since the counters started: {shown}{when}", f"{srcs}: {shown}", why, fix, ""))
        dropped = sorted(k for k, v in now.items() if v and DROPPED.search(k.removeprefix("ethtool:")))
        if dropped:
            shown = ", ".join(f"{k.removeprefix('ethtool:')} {now[k]}" + (f" (+{rising[k]})" if k in rising else "") for k in dropped[:6])
            out.append(Finding(self.id, h.name, "info", f"{dev}: drop counters {shown}", f"{srcs}: {shown}",
                               "rx_dropped also counts frames the stack discards on purpose (unknown protocol, VLAN not configured): only a count rising during a test matters"))
        if not out:
            out.append(Finding(self.id, h.name, "info", f"{dev}: no error or drop counter above 0 ({len(now)} counters)", srcs))
        return out


CHECKS = (Softnet(), NicErrors())
