"""The powercap (RAPL) energy reader on a fake sysfs tree: the sandbox test seam's /sys,
holding the zones of a 2-socket machine in the layout of kernel
Documentation/power/powercap/powercap.rst, counters that advance and wrap. This machine (a
VM) has no powercap zones; there the reader says why and gives nothing."""
from __future__ import annotations

from pathlib import Path

from nettune.probes.powercap import close_window, delta_uj, open_window, zones
from nettune.targets.sandbox import SandboxHost, seed_tree

PC = "sys/class/powercap/"
MAX = 262143328850  # max_energy_range_uj of an Intel package zone


def seed(root: Path, energy: dict[str, int]) -> None:
    seed_tree(root)
    layout = {"intel-rapl:0": "package-0", "intel-rapl:1": "package-1", "intel-rapl:0:0": "core", "intel-rapl:0:1": "dram", "intel-rapl-mmio:0": "package-0"}
    for d, name in layout.items():
        (root / PC / d).mkdir(parents=True, exist_ok=True)
        (root / PC / d / "name").write_text(name + "\n")
        (root / PC / d / "max_energy_range_uj").write_text(f"{MAX}\n")
        (root / PC / d / "energy_uj").write_text(f"{energy.get(d, 0)}\n")


def test_joules_per_domain_with_a_wrap(tmp_path):
    root = tmp_path / "a"
    seed(root, {"intel-rapl:0": 1_000_000, "intel-rapl:1": MAX - 500_000, "intel-rapl:0:1": 10})
    host = SandboxHost("a", root)
    zs, why = zones(host)
    # core lies inside its package and is not summed; the mmio zone duplicates package-0
    assert sorted(z.name for z in zs) == ["dram", "package-0", "package-1"] and why == ""
    w, why = open_window(host)
    assert w is not None
    (root / PC / "intel-rapl:0/energy_uj").write_text("3000000\n")  # +2 J
    (root / PC / "intel-rapl:1/energy_uj").write_text("1500000\n")  # wrapped: +2 J
    (root / PC / "intel-rapl:0:1/energy_uj").write_text("250010\n")  # +0.25 J
    (root / PC / "intel-rapl-mmio:0/energy_uj").write_text("9000000\n")  # never counted twice
    j = close_window(host, w)
    assert j == {"package-0": 2.0, "package-1": 2.0, "dram": 0.25}
    assert delta_uj(MAX - 1, 1, MAX) == 2


def test_a_host_without_counters_says_why(tmp_path):
    seed_tree(tmp_path / "b")  # a machine without /sys/class/powercap (like this VM)
    w, why = open_window(SandboxHost("b", tmp_path / "b"))
    assert w is None and "no powercap (RAPL) package zones" in why


def test_probe_writes_joules_and_watts_or_why(tmp_path):
    from nettune.engines.result import TestResult
    from nettune.probes.powercap import PowercapProbe

    root = tmp_path / "a"
    seed(root, {"intel-rapl:0": 0})
    p = PowercapProbe(SandboxHost("a", root))
    p.start()
    (root / PC / "intel-rapl:0/energy_uj").write_text("5000000\n")
    p.stop()
    res = TestResult(engine="iperf3", ok=True)
    p.write(res)
    e = res.extra["energy"]["machine"]
    assert e["joules"] == {"package-0": 5.0, "dram": 0.0, "package-1": 0.0} and e["watts"] > 0
    seed_tree(tmp_path / "b")
    q = PowercapProbe(SandboxHost("b", tmp_path / "b"), "hypervisor:pve")
    q.start()
    q.stop()
    q.write(res)
    assert "no powercap" in res.extra["energy"]["hypervisor:pve"]["why"]
