"""Doctor checks that need hardware this machine lacks (amd-pstate, cpufreq governors, a
degraded PCIe link, tuned, deep C-states, a virtio guest, a Proxmox host, a multi-queue
NIC), run on recorded real-format files and command outputs (tests/fixtures/doctor/, each
with its source). No root, no network."""
from __future__ import annotations

from pathlib import Path

from nettune.doctor.audit import audit
from nettune.doctor.base import HostView
from nettune.doctor.registry import CHECKS, check_ids

from doctor_fakes import RecordedHost


def found(case: str, check: str, interface: str | None = None):
    h = RecordedHost(case)
    v = HostView(case, h, interface=interface or h.interface or "eth0")
    rep = audit([v], only={check})
    assert not rep.errors, rep.errors
    return [f for f in rep.findings if f.check == check]


def test_acpi_cpufreq_on_amd_and_a_mixed_governor():
    d = found("amd_acpi_cpufreq", "cpu.driver")
    assert [f.severity for f in d] == ["warn"] and "acpi-cpufreq on an AMD CPU" in d[0].seen and "amd_pstate=active" in d[0].fix
    assert "--remove-args=amd_pstate" in d[0].revert and d[0].knob is None  # a boot setting: never applied by --fix
    g = found("amd_acpi_cpufreq", "cpu.governor")[0]
    assert g.severity == "warn" and g.seen == "governor schedutil on 3 CPUs, performance on 1 CPU"
    # the fix is the cpufreq:governor knob, which journals every CPU's own value: a restore puts the mix back
    assert g.knob == {"key": "cpufreq:governor", "value": "performance"}
    assert "cpu2/cpufreq/scaling_governor=performance" in g.revert and "cpu0/cpufreq/scaling_governor=schedutil" in g.revert


def test_amd_pstate_modes_and_epp():
    p = found("amd_pstate_passive", "cpu.driver")[0]
    assert p.severity == "info" and "passive" in p.seen and p.knob == {"key": "amd_pstate:mode", "value": "active"}
    assert found("amd_pstate_passive", "cpu.epp") == []  # passive mode has no EPP files
    e = found("amd_pstate_epp", "cpu.epp")[0]
    assert e.severity == "warn" and e.seen == "EPP balance_performance on 3, power on 1"


def test_tuned_balanced_and_verify_failing():
    f = found("tuned_balanced", "cpu.tuned")
    assert [x.severity for x in f] == ["warn", "problem"]
    assert f[0].knob == {"key": "tuned", "value": "throughput-performance"} and f[0].revert == "tuned-adm profile balanced"
    assert "verify fails" in f[1].seen and "exit 1" in f[1].evidence and "Verification failed" in f[1].evidence


def test_degraded_pcie_link_and_shared_card():
    f = found("pcie_degraded", "pcie.link")
    sev = {x.severity: x for x in f}
    assert set(sev) == {"warn", "problem"}
    assert "8 GT/s x4 of 8 GT/s x8" in sev["warn"].seen
    # Gen3 x4 = 4 x 7.877 = 31.5 Gbit/s for two 40G ports
    assert "x4 Gen3: about 32 Gbit/s for the 2 ports of this card" in sev["problem"].seen and "80 Gbit/s" in sev["problem"].seen


def test_deep_c_state_fix_keeps_the_shallow_states():
    f = found("cstate_deep", "cpu.cstate")[0]
    assert f.severity == "warn" and "C6" in f.seen and "133 µs" in f.seen
    assert f.knob == {"key": "cpuidle:max_state", "value": 2}  # POLL, C1, C1E (10 µs) stay; C6 goes


def test_virtio_guest_with_one_queue_for_eight_vcpus():
    f = found("virtio_one_queue", "virt.vm")
    assert f[0].severity == "info" and "QEMU/KVM" in f[0].seen  # DMI names it (sys_vendor QEMU)
    assert f[1].severity == "warn" and "1 queue(s) for 8 vCPUs" in f[1].seen and "queues=8" in f[1].fix


def test_proxmox_vm_nics_against_vcpus():
    f = found("proxmox_queues", "virt.proxmox")
    # net0 (model as the default key) has no queues= -> 1; net1 (model=) has 4; the VM has 4 cores x 2 sockets
    assert [x.seen for x in f] == ["VM 101 net0: queues=1 for 8 vCPUs", "VM 101 net1: queues=4 for 8 vCPUs"]
    assert f[0].knob == {"key": "pve_queues:101/net0", "value": 8}


def test_channels_and_rings_of_a_multiqueue_nic():
    c = found("channels_few", "nic.channels")[0]
    assert c.severity == "warn" and c.knob == {"key": "channels:combined@ens1f0", "value": 16} and c.revert == "ethtool -L ens1f0 combined 4"
    r = found("channels_few", "nic.rings")[0]
    assert r.severity == "warn" and r.knob == {"key": "ring:rx@ens1f0", "value": 4096}


def test_every_check_has_an_id_a_title_and_a_source_and_is_documented():
    ids = [c.id for c in CHECKS]
    assert len(ids) == len(set(ids)) and all(c.title and c.source for c in CHECKS)
    doc = (Path(__file__).parent.parent / "docs" / "doctor.md").read_text()
    assert [i for i in check_ids() if f"| `{i}` |" not in doc] == []


def test_freebsd_lro_and_tso_supported_but_off():
    # a real `ifconfig -m` capture (opnsense/core issue #1946, tests/fixtures/freebsd/real/SOURCES.md)
    text = (Path(__file__).parent / "fixtures" / "freebsd" / "real" / "lagg0_failover_ifconfig_m.txt").read_text()
    h = RecordedHost("lagg0", os="freebsd", data={"files": {}, "commands": {"ifconfig -m lagg0": [0, text, ""]}, "interface": "lagg0"})
    rep = audit([HostView("fbsd", h, interface="lagg0")], only={"nic.offloads"})
    assert not rep.errors
    assert [f.seen for f in rep.findings] == ["lagg0: LRO supported but off (LRO)", "lagg0: TSO supported but off (TSO4, TSO6)"]
    assert rep.findings[0].knob == {"key": "offload:lro@lagg0", "value": "on"} and rep.findings[0].revert == "ifconfig lagg0 -lro"
