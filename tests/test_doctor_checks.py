"""The new checks' verdicts on inputs in the formats the kernel and ethtool print them
(/proc/interrupts lines with the drivers' vector names, as Documentation/networking/
multi-pf-netdev.rst shows mlx5's; sysfs attribute values; ethtool's layouts), each
given to doctor as a capture holding those inputs. The corpus of real captures is
tests/test_doctor_corpus.py; this covers the paths no capture there takes. No root."""
from __future__ import annotations

from nettune.doctor.audit import audit
from nettune.doctor.base import HostView
from nettune.doctor.capture import CaptureSource
from nettune.doctor.sources import argv_key


def host(files: dict[str, str] | None = None, commands: dict[str, str] | None = None, globs: dict[str, dict[str, str]] | None = None,
         interface: str = "eth0", seconds: dict[str, str] | None = None) -> HostView:
    """A capture holding these answers (a second read of a file: `seconds`)."""
    rec: dict = {"read": {p: [{"text": t}] for p, t in (files or {}).items()},
                 "run": {argv_key(c.split()): [{"rc": 0, "stdout": out, "stderr": ""}] for c, out in (commands or {}).items()},
                 "files": {p: [{"texts": t, "known": True}] for p, t in (globs or {}).items()}, "which": {}}
    for p, t in (seconds or {}).items():
        rec["read"][p].append({"text": t})
    return HostView("h", None, interface=interface, source=CaptureSource(rec, "capture test"))


def found(h: HostView, check: str) -> list[tuple[str, str]]:
    rep = audit([h], only={check})
    assert not rep.errors, rep.errors
    return [(f.severity, f.seen) for f in rep.findings]


HDR = "            CPU0       CPU1       CPU2       CPU3\n"
MLX = ("  36:   88123400          0          0          0  IR-PCI-MSIX-0000:08:00.0    1-edge      mlx5_comp0@pci:0000:08:00.0\n"
       "  39:   77231010          2          0          0  IR-PCI-MSIX-0000:08:00.0    2-edge      mlx5_comp1@pci:0000:08:00.0\n"
       "  40:          0          0          0          0  IR-PCI-MSIX-0000:08:00.0    0-edge      mlx5_async0@pci:0000:08:00.0\n")
ETH_I = "driver: {drv}\nversion: 6.1.0\nfirmware-version: 1\nexpansion-rom-version: \nbus-info: {bus}\nsupports-statistics: yes\n"


def test_mlx5_queue_interrupts_all_on_cpu0_are_found_by_the_pci_function():
    h = host({"/proc/interrupts": HDR + MLX}, {"ethtool -i eth0": ETH_I.format(drv="mlx5_core", bus="0000:08:00.0")})
    assert found(h, "nic.irq") == [("warn", "eth0: its 2 queue interrupts land on CPU0 (100% of 165354412 since boot)")]


def test_spread_interrupts_and_the_second_read_decide_on_the_interval():
    spread = HDR + MLX.replace("  77231010          2", "         0   77231012")
    h = host({"/proc/interrupts": spread}, {"ethtool -i eth0": ETH_I.format(drv="mlx5_core", bus="0000:08:00.0")})
    assert found(h, "nic.irq") == [("info", "eth0: 2 queue vectors over 2 CPU(s) (since boot)")]
    # spread since boot, but everything of the last interval landed on CPU1
    later = spread.replace("88123400", "88123410").replace("77231012", "77251012")
    h = host({"/proc/interrupts": spread}, {"ethtool -i eth0": ETH_I.format(drv="mlx5_core", bus="0000:08:00.0")}, seconds={"/proc/interrupts": later})
    assert found(h, "nic.irq") == [("warn", "eth0: its 2 queue interrupts land on CPU1 (100% of 20010 in the interval)")]


def test_interrupt_names_doctor_does_not_know_are_cannot_tell():
    text = HDR + "  24:    5000000          0          0          0  Hyper-V VMbus   hyperv\n"
    h = host({"/proc/interrupts": text}, {"ethtool -i eth0": ETH_I.format(drv="hv_netvsc", bus="")})
    (sev, seen), = found(h, "nic.irq")
    assert sev == "cannot_tell" and "hv_netvsc's interrupts arrive through VMBus" in seen
    text = HDR + "  60:    5000000          0          0          0  PCI-MSI 524288-edge      eth0-q0\n  61:  5000000  0  0  0  PCI-MSI 524289-edge  eth0-q1\n"
    h = host({"/proc/interrupts": text}, {"ethtool -i eth0": ETH_I.format(drv="newdrv", bus="0000:01:00.0")})
    (sev, seen), = found(h, "nic.irq")
    assert sev == "cannot_tell" and "named eth0-q0, eth0-q1, a naming doctor does not know" in seen


NODES = {"/sys/devices/system/node/node0/cpulist": "0-1", "/sys/devices/system/node/node1/cpulist": "2-3"}


def test_numa_nic_on_one_node_its_interrupts_and_the_application_on_the_other():
    h = host({"/proc/interrupts": HDR + MLX, "/sys/class/net/eth0/device/numa_node": "1"},
             {"ethtool -i eth0": ETH_I.format(drv="mlx5_core", bus="0000:08:00.0")}, {"/sys/devices/system/node/node*/cpulist": NODES})
    h.app_cpus = [0, 1]
    got = found(h, "nic.numa")
    assert ("warn", "eth0 is on node 1, but 100% of its queue interrupts land on other nodes' CPUs (since boot)") in got
    assert ("warn", "the application's CPUs 0-1 are not all on eth0's node 1 (2-3)") in got
    h = host({"/sys/class/net/eth0/device/numa_node": "-1"}, globs={"/sys/devices/system/node/node*/cpulist": NODES})
    assert found(h, "nic.numa") == [("info", "the platform reports no NUMA node for eth0 (numa_node -1)")]


def test_link_without_carrier_half_duplex_and_below_the_nics_speed():
    base = {"/sys/class/net/eth0/operstate": "up", "/sys/class/net/eth0/carrier": "1", "/sys/class/net/eth0/mtu": "1500",
            "/sys/class/net/eth0/speed": "1000", "/sys/class/net/eth0/duplex": "full"}
    drv = {"ethtool -i eth0": ETH_I.format(drv="ixgbe", bus="0000:03:00.0")}
    assert found(host(base | {"/sys/class/net/eth0/carrier": "0", "/sys/class/net/eth0/operstate": "down"}, drv), "nic.link")[0] == ("problem", "eth0: no carrier (link down)")
    assert found(host(base | {"/sys/class/net/eth0/duplex": "half", "/sys/class/net/eth0/speed": "100"}, drv), "nic.link")[0] == ("problem", "eth0: half duplex at 100 Mbit/s")
    settings = ("Settings for eth0:\n\tSupported link modes:   1000baseT/Full\n\t                        10000baseT/Full\n"
                "\tAdvertised link modes:  1000baseT/Full\n\t                        10000baseT/Full\n"
                "\tLink partner advertised link modes:  100baseT/Full\n\t                                     1000baseT/Full\n"
                "\tSpeed: 1000Mb/s\n\tDuplex: Full\n\tAuto-negotiation: on\n\tLink detected: yes\n")
    got = found(host(base, drv | {"ethtool eth0": settings}), "nic.link")
    assert got == [("warn", "eth0: link at 1 Gbit/s, the NIC supports 10 Gbit/s; the link partner advertises at most 1 Gbit/s")]
    veth = {"/sys/class/net/eth0/speed": "10000", "/sys/class/net/eth0/mtu": "1500", "/sys/class/net/eth0/operstate": "up", "/sys/class/net/eth0/carrier": "1"}
    got = found(host(veth, {"ethtool -i eth0": ETH_I.format(drv="veth", bus="")}), "nic.link")
    assert got == [("info", "eth0: a virtual device (veth) with no physical rate (it reports 10 Gbit/s: a nominal figure, not a limit), MTU 1500")]


def test_tunnel_mtu_over_the_underlay_and_offload_off_but_changeable():
    globs = {"/sys/class/net/*/uevent": {"/sys/class/net/vxlan0/uevent": "DEVTYPE=vxlan\nINTERFACE=vxlan0\nIFINDEX=5", "/sys/class/net/eth0/uevent": "INTERFACE=eth0\nIFINDEX=2"}}
    files = {"/sys/class/net/vxlan0/mtu": "1500", "/sys/class/net/eth0/mtu": "1500"}
    feats = "Features for eth0:\ntx-udp_tnl-segmentation: off\ntx-udp_tnl-csum-segmentation: off\n"
    got = found(host(files, {"ethtool -k eth0": feats, "ethtool -i eth0": ETH_I.format(drv="ice", bus="0000:3b:00.0")}, globs), "net.tunnel")
    assert ("problem", "vxlan0: MTU 1500 + 50 bytes of vxlan = 1550 > eth0's MTU 1500") in got
    assert ("warn", "eth0: UDP tunnel segmentation offload off (the NIC could do it)") in got
    wg = {"/sys/class/net/*/uevent": {"/sys/class/net/wg0/uevent": "DEVTYPE=wireguard\nINTERFACE=wg0"}}
    got = found(host({"/sys/class/net/wg0/mtu": "1440", "/sys/class/net/eth0/mtu": "1500"}, {}, wg), "net.tunnel")
    assert got == [("info", "wg0: MTU 1440 fits eth0 (1500) for IPv4 endpoints only (IPv6 adds 80)")]


def test_errors_rising_between_two_reads():
    pat = "/sys/class/net/eth0/statistics/*"
    first = {"/sys/class/net/eth0/statistics/rx_crc_errors": "10", "/sys/class/net/eth0/statistics/rx_missed_errors": "5", "/sys/class/net/eth0/statistics/rx_dropped": "7"}
    second = dict(first) | {"/sys/class/net/eth0/statistics/rx_crc_errors": "14"}
    rec = {"read": {}, "run": {}, "which": {}, "files": {pat: [{"texts": first, "known": True}, {"texts": second, "known": True}]}}
    h = HostView("h", None, interface="eth0", source=CaptureSource(rec, "capture test"))
    got = found(h, "nic.errors")
    assert ("problem", "eth0: physical-layer errors (CRC, alignment, symbol) rising: rx_crc_errors 10 (+4)") in got
    assert ("info", "eth0: receive overflows (ring or FIFO full) since the counters started: rx_missed_errors 5 (not rising in the interval)") in got
    assert ("info", "eth0: drop counters rx_dropped 7") in got


def test_backlog_is_judged_by_the_drops_it_causes_and_buffers_by_the_bdp():
    softnet = "0000a000 00000003 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n"
    h = host({"/proc/sys/net/core/netdev_max_backlog": "1000", "/proc/net/softnet_stat": softnet})
    assert found(h, "net.backlog") == [("warn", "netdev_max_backlog 1000 and 3 packets dropped by the per-CPU backlog")]
    files = {"/proc/sys/net/ipv4/tcp_rmem": "4096 131072 6291456", "/proc/sys/net/ipv4/tcp_wmem": "4096 16384 4194304",
             "/sys/class/net/eth0/speed": "100000", "/sys/class/net/eth0/carrier": "1", "/sys/class/net/eth0/mtu": "9000"}
    h = host(files, {"ethtool -i eth0": ETH_I.format(drv="mlx5_core", bus="0000:08:00.0")})
    h.rtt_ms, h.rtt_peer = 2.0, "peer"
    got = found(h, "net.buffers")
    # 100 Gbit/s x 2 ms = 23.8 MiB: 6 MiB of tcp_rmem cannot fill it
    assert ("problem", "tcp_rmem max 6.0 MiB is below twice the BDP (23.8 MiB)") in got
