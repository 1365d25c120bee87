"""Text the checks read, parsed once here: ethtool's outputs, /proc/interrupts,
/proc/net/softnet_stat, /proc/net/dev, `ip -s -d link` (as a capture holds it; live, the
checks read sysfs), dmidecode's System/Chassis/BIOS sections.

Formats: ethtool(8) as netlink/*.c and ethtool.c print them; /proc/interrupts from
kernel/irq/proc.c show_interrupts (a header of CPU columns, one line per IRQ: counts per
online CPU, chip, hwirq and type, then the actions' names joined by ", "); softnet_stat
from net/core/net-procfs.c (hex columns: processed, dropped, time_squeeze, 0 x5,
cpu_collision, received_rps, flow_limit_count; since 5.10 backlog length and the CPU
index); `ip -s -d link` from iproute2 ip/ipaddress.c.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


def num(v: str | None) -> int | None:
    v = (v or "").strip()
    return int(v) if v.lstrip("-").isdigit() else None


# -- ethtool
def ethtool_info(text: str) -> dict[str, str]:
    """`ethtool -i`: {"driver": ..., "bus-info": ..., ...}."""
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition(":")
        if sep:
            out[k.strip()] = v.strip()
    return out


def ethtool_rows(text: str, section: str) -> dict[str, str]:
    """The `name: value` rows of one section of ethtool -l / -g output."""
    out: dict[str, str] = {}
    part = text.split(section, 1)[1] if section in text else ""
    for line in part.splitlines()[1:]:
        if not line.strip() or line.rstrip().endswith(":") and not line.startswith(("RX", "TX", "Combined", "Other")):
            break
        k, _, v = line.partition(":")
        out[k.strip()] = v.strip()
    return out


def ethtool_features(text: str) -> dict[str, tuple[str, bool]]:
    """`ethtool -k`: {feature: (on|off, fixed)}."""
    out = {}
    for line in text.splitlines():
        name, sep, rest = line.strip().partition(":")
        if sep and rest.split():
            out[name] = (rest.split()[0], "[fixed]" in rest)
    return out


def ethtool_stats(text: str) -> dict[str, int]:
    """`ethtool -S`: {counter: value} (integers only)."""
    out = {}
    for line in text.splitlines():
        k, sep, v = line.strip().rpartition(":")
        if sep and v.strip().isdigit() and k:
            out[k.strip()] = int(v)
    return out


MODE = re.compile(r"(\d+)base")


@dataclass
class Settings:
    speed: int | None = None  # Mb/s, None: unknown (virtio, link down)
    duplex: str | None = None
    autoneg: str | None = None
    supported: list[int] = field(default_factory=list)  # Mb/s of each supported link mode
    advertised: list[int] = field(default_factory=list)
    partner: list[int] = field(default_factory=list)
    link: bool | None = None  # Link detected


def ethtool_settings(text: str) -> Settings:
    """`ethtool IF`: speed, duplex, autonegotiation, link modes, link detected."""
    s = Settings()
    current = ""
    for line in text.splitlines():
        key, sep, val = line.strip().partition(":")
        if sep:
            current = key.strip()
        elif not line.startswith(("\t\t", "        ", "\t ")):
            continue
        else:
            val = line
        speeds = [int(m) for m in MODE.findall(val)]
        if current == "Supported link modes":
            s.supported += speeds
        elif current == "Advertised link modes":
            s.advertised += speeds
        elif current == "Link partner advertised link modes":
            s.partner += speeds
        if not sep:
            continue
        v = val.strip()
        if current == "Speed":
            m = re.match(r"(\d+)Mb/s", v)
            s.speed = int(m.group(1)) if m else None
        elif current == "Duplex":
            s.duplex = v.split()[0].lower() if v and not v.startswith("Unknown") else None
        elif current == "Auto-negotiation":
            s.autoneg = v
        elif current == "Link detected":
            s.link = v == "yes" if v in ("yes", "no") else None
    return s


# -- /proc/interrupts
@dataclass
class IrqLine:
    irq: str
    counts: list[int]
    names: list[str]  # the actions' names (the last column, split at ", ")
    text: str


def interrupts(text: str) -> tuple[list[int], list[IrqLine], bool]:
    """(CPU number of each count column, the numbered IRQ lines, True when the header
    named the CPUs). A header-less excerpt (`grep eth /proc/interrupts`) numbers the
    columns 0..n-1, which is right only when every CPU is online."""
    lines = text.splitlines()
    cpus: list[int] = []
    header = False
    if lines and re.match(r"^\s*CPU\d+", lines[0]):
        cpus = [int(c[3:]) for c in lines[0].split()]
        header = True
        lines = lines[1:]
    out = []
    for line in lines:
        m = re.match(r"^\s*(\d+):\s+(.*)$", line)
        if not m:
            continue
        words = m.group(2).split()
        counts = []
        for w in words:
            if w.isdigit() and (not cpus or len(counts) < len(cpus)):
                counts.append(int(w))
            else:
                break
        if not counts:
            continue
        rest = words[len(counts):]
        names = [rest[-1]] if rest else []
        i = len(rest) - 2
        while i >= 0 and rest[i].endswith(","):  # "ehci_hcd:usb1, mmc0": shared line, two actions
            names.insert(0, rest[i].rstrip(","))
            i -= 1
        out.append(IrqLine(m.group(1), counts, names, line))
    if not cpus and out:
        cpus = list(range(max(len(x.counts) for x in out)))
    return cpus, out, header


# -- /proc/net/softnet_stat
@dataclass
class Softnet:
    cpu: int  # the row's CPU (its own index column since 5.10, else the row number)
    processed: int
    dropped: int
    squeezed: int


def softnet(text: str) -> tuple[list[Softnet], bool]:
    """(rows, True when the rows carry their CPU index: before 5.10 the rows are the
    online CPUs in order, so a row number is a CPU only when all are online)."""
    rows, indexed = [], False
    for n, line in enumerate(text.splitlines()):
        cols = line.split()
        if len(cols) < 3 or not all(re.fullmatch(r"[0-9a-fA-F]+", c) for c in cols):
            continue
        vals = [int(c, 16) for c in cols]
        indexed = len(vals) >= 13
        rows.append(Softnet(vals[12] if indexed else n, vals[0], vals[1], vals[2]))
    return rows, indexed


# -- /proc/net/dev and `ip -s -d link`
DEV_COLS = ("rx_bytes", "rx_packets", "rx_errors", "rx_dropped", "rx_fifo_errors", "rx_frame_errors", "rx_compressed", "multicast",
            "tx_bytes", "tx_packets", "tx_errors", "tx_dropped", "tx_fifo_errors", "collisions", "tx_carrier_errors", "tx_compressed")


def proc_net_dev(text: str) -> dict[str, dict[str, int]]:
    out = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        vals = rest.split()
        if sep and len(vals) >= 16 and all(v.isdigit() for v in vals[:16]):
            out[name.strip()] = dict(zip(DEV_COLS, (int(v) for v in vals[:16])))
    return out


@dataclass
class Link:
    name: str
    mtu: int | None = None
    state: str | None = None  # operstate as ip prints it (UP, DOWN, UNKNOWN...)
    flags: set[str] = field(default_factory=set)
    kind: str | None = None  # vxlan, geneve, wireguard, veth, bridge... (-d)
    details: dict[str, str] = field(default_factory=dict)  # the -d line's words (dev, id, dstport, local, remote, external)
    stats: dict[str, int] = field(default_factory=dict)  # -s: rx_errors, rx_dropped, tx_errors...


KINDS = ("vxlan", "geneve", "wireguard", "veth", "bridge", "bond", "vlan", "macvlan", "ipvlan", "openvswitch", "tun", "dummy", "gre", "gretap", "ipip", "sit")
_RX = {"bytes": "rx_bytes", "packets": "rx_packets", "errors": "rx_errors", "dropped": "rx_dropped", "overrun": "rx_over_errors",
       "missed": "rx_missed_errors", "mcast": "multicast"}
_TX = {"bytes": "tx_bytes", "packets": "tx_packets", "errors": "tx_errors", "dropped": "tx_dropped", "carrier": "tx_carrier_errors",
       "collsns": "collisions"}


def ip_links(text: str) -> dict[str, Link]:
    """`ip -s -d link` / `ip -d address` text: one Link per interface."""
    out: dict[str, Link] = {}
    cur: Link | None = None
    pending: tuple[dict[str, str], list[str]] | None = None
    for line in text.splitlines():
        m = re.match(r"^\d+:\s+([^:@\s]+)(?:@\S+)?:\s+<([^>]*)>(.*)$", line)
        if m:
            cur = Link(m.group(1), flags=set(m.group(2).split(",")))
            words = m.group(3).split()
            for k in ("mtu", "state"):
                if k in words[:-1]:
                    v = words[words.index(k) + 1]
                    if k == "mtu":
                        cur.mtu = num(v)
                    else:
                        cur.state = v
            out[cur.name] = cur
            continue
        if cur is None:
            continue
        words = line.split()
        if not words:
            continue
        if words[0] in ("RX:", "TX:"):
            pending = (_RX if words[0] == "RX:" else _TX, [w.rstrip(":") for w in words[1:]])
            continue
        if pending and all(w.isdigit() for w in words):
            names, cols = pending
            for col, val in zip(cols, words):
                if col in names:
                    cur.stats[names[col]] = int(val)
            pending = None
            continue
        pending = None
        if words[0] in KINDS and cur.kind is None:
            cur.kind = words[0]
            for i, w in enumerate(words[1:], 1):
                if w in ("dev", "id", "dstport", "local", "remote", "group", "ttl") and i + 1 < len(words):
                    cur.details[w] = words[i + 1]
                elif w == "external":
                    cur.details["external"] = "yes"
    return out


# -- dmidecode
def dmidecode(text: str) -> dict[str, str]:
    """The /sys/class/dmi/id names of what dmidecode prints in its BIOS, System and
    Chassis sections (a mail quotes it with '> ': stripped)."""
    keys = {("BIOS Information", "Vendor"): "bios_vendor", ("BIOS Information", "Version"): "bios_version",
            ("System Information", "Manufacturer"): "sys_vendor", ("System Information", "Product Name"): "product_name",
            ("System Information", "Version"): "product_version", ("Chassis Information", "Asset Tag"): "chassis_asset_tag",
            ("Chassis Information", "Manufacturer"): "chassis_vendor", ("Base Board Information", "Manufacturer"): "board_vendor"}
    out: dict[str, str] = {}
    section = ""
    for raw in text.splitlines():
        line = re.sub(r"^(> ?)+", "", raw)
        if line and not line[0].isspace():
            section = line.strip()
            continue
        k, sep, v = line.strip().partition(":")
        if sep and (section, k.strip()) in keys:
            out.setdefault(keys[(section, k.strip())], v.strip())
    return out
