"""Hypervisor queue knobs (Proxmox qm, libvirt virsh) against recorded-format outputs."""
import pytest

from nettune.knobs.base import Ctx, KnobError, Loc
from nettune.knobs.kinds.libvirt_queues import LibvirtQueues, queues_in, set_queues
from nettune.knobs.kinds.libvirt_vcpupin import LibvirtVcpupin, parse_pins
from nettune.knobs.kinds.proxmox_queues import ProxmoxQueues, parse_config, pending_keys, queues_of, with_queues

from hypervisor_fakes import FIX, FakePve, FakeVirsh

PVE, LQ, PIN = ProxmoxQueues(), LibvirtQueues(), LibvirtVcpupin()


def _fast(kind):
    """Poll restarts without sleeping (the fakes change state per call, not per second)."""
    orig = kind.restart

    def quick(ex, lc, name, timeout=300.0, poll=2.0):
        return orig(ex, lc, name, timeout, 0.0)

    kind.restart = quick


_fast(PVE)
_fast(LQ)


def loc(kind: str, arg: str | None) -> Loc:
    return Loc(f"{kind}:{arg}" if arg else kind, kind, arg)


def test_qm_formats():
    cfg = parse_config((FIX / "qm_config.txt").read_text())
    assert cfg["net0"].endswith("queues=8") and "snaptime" not in cfg  # snapshot sections ignored
    assert queues_of(cfg["net0"]) == 8 and queues_of(cfg["net1"]) == 1
    assert with_queues(cfg["net0"], 16) == "virtio=BC:24:11:3A:5F:01,bridge=vmbr0,firewall=1,mtu=9000,queues=16"
    assert with_queues(cfg["net0"], 1) == "virtio=BC:24:11:3A:5F:01,bridge=vmbr0,firewall=1,mtu=9000"
    assert pending_keys((FIX / "qm_pending.txt").read_text()) == {"net0", "tablet"}


def test_pve_queues_apply_reboots_and_restores():
    pve = FakePve()
    lq = loc("pve_queues", "101/net0")
    assert PVE.parse(lq, "16") == 16 and PVE.read(pve, lq)["queues"] == 8
    PVE.validate(pve, lq, 16, Ctx())
    PVE.apply(pve, lq, 16)
    assert ["qm", "reboot", "101", "--timeout", "300"] in pve.calls  # pending -> restart
    assert PVE.read(pve, lq)["queues"] == 16
    assert pve.queues_line().endswith("mtu=9000,queues=16")  # every other option kept
    PVE.restore(pve, lq, 8)  # a journal from before the line was kept: the number alone
    assert PVE.read(pve, lq)["queues"] == 8 and pve.calls.count(["qm", "reboot", "101", "--timeout", "300"]) == 2


def test_pve_queues_hotplugged_change_needs_no_reboot():
    pve = FakePve(hotplug_network=True)
    lq = loc("pve_queues", "101")
    PVE.apply(pve, lq, 4)
    assert PVE.read(pve, lq)["queues"] == 4 and not [c for c in pve.calls if c[:2] == ["qm", "reboot"]]


def test_pve_queues_refusals():
    pve = FakePve()
    for arg in (None, "abc", "101/eth0", "12"):
        with pytest.raises(KnobError, match="VMID"):
            PVE.parse(loc("pve_queues", arg), 4)
    with pytest.raises(KnobError, match="range"):
        PVE.parse(loc("pve_queues", "101"), 65)
    with pytest.raises(KnobError, match="needs virtio"):
        PVE.validate(pve, loc("pve_queues", "101/net1"), 2, Ctx())
    with pytest.raises(KnobError, match="42 vCPUs"):
        PVE.validate(pve, loc("pve_queues", "101"), 64, Ctx())
    with pytest.raises(KnobError, match="does not exist"):
        PVE.read(pve, loc("pve_queues", "999"))
    with pytest.raises(KnobError, match="no net7"):
        PVE.read(pve, loc("pve_queues", "101/net7"))


def test_libvirt_xml():
    xml = (FIX / "virsh_dumpxml.xml").read_text()
    assert queues_in(xml, None) == 4 and queues_in(xml, "52:54:00:AA:BB:CC") == 1 and queues_in(xml, "1") == 1
    assert queues_in(set_queues(xml, None, 16), None) == 16
    two = set_queues(xml, "52:54:00:aa:bb:cc", 8)
    # an interface without <driver> gets libvirt's own <driver queues='N'/> on a line of its own
    assert queues_in(two, "1") == 8 and queues_in(two, "0") == 4
    assert two == xml.replace("<model type='virtio'/>\n      <alias name='net1'/>", "<model type='virtio'/>\n      <driver queues='8'/>\n      <alias name='net1'/>")
    assert queues_in(set_queues(xml, None, 1), None) == 1
    with pytest.raises(KnobError, match="not virtio"):
        set_queues(xml, "2", 4)
    with pytest.raises(KnobError, match="no interface with MAC"):
        queues_in(xml, "52:54:00:00:00:01")


def test_libvirt_queues_define_shutdown_start_and_restore():
    hv = FakeVirsh()
    lq = loc("libvirt_queues", "fedora-vm")
    assert LQ.read(hv, lq)["queues"] == 4
    LQ.validate(hv, lq, 16, Ctx())
    LQ.apply(hv, lq, 16)
    verbs = [c[1] for c in hv.calls if c[0] == "virsh" and c[1] in ("define", "shutdown", "start")]
    assert verbs == ["define", "shutdown", "start"] and not hv.files  # temp file removed
    assert LQ.read(hv, lq)["queues"] == 16 and hv.state == "running"
    LQ.restore(hv, lq, 4)  # a journal from before the start tag was kept: the number alone
    assert LQ.read(hv, lq)["queues"] == 4
    with pytest.raises(KnobError, match="16 vCPUs"):
        LQ.validate(hv, lq, 32, Ctx())


def test_libvirt_queues_restore_starts_a_guest_a_killed_apply_left_off():
    """kill -9 between `virsh shutdown` and `virsh start` leaves the guest off with the new
    definition; the journaled reading says it ran, so the restore starts it again."""
    hv = FakeVirsh()
    lq = loc("libvirt_queues", "fedora-vm")
    before = LQ.read(hv, lq)
    assert before["state"] == "running"
    LQ.apply(hv, lq, 16)
    hv.state = "shut off"  # where a killed apply would have left it
    LQ.restore(hv, lq, before)
    assert hv.state == "running" and LQ.read(hv, lq)["queues"] == 4 and LQ.read(hv, lq)["driver"] == before["driver"]
    off = FakeVirsh(state="shut off")  # a guest that was off before nettune stays off
    before = LQ.read(off, lq)
    LQ.apply(off, lq, 16)
    LQ.restore(off, lq, before)
    assert off.state == "shut off" and not [c for c in off.calls if c[:2] == ["virsh", "start"]]


def test_libvirt_guest_that_does_not_shut_down_is_not_destroyed():
    hv = FakeVirsh(never_shuts_down=True)
    lq = loc("libvirt_queues", "fedora-vm")
    with pytest.raises(KnobError, match="shut off"):
        LQ.restart(hv, lq, "fedora-vm", timeout=0.05)
    assert not [c for c in hv.calls if c[:2] == ["virsh", "destroy"]]


@pytest.mark.parametrize("old", [False, True])
def test_vcpupin_read_apply_restore(old):
    hv = FakeVirsh(old_vcpupin_format=old)
    lp = loc("libvirt_vcpupin", "fedora-vm")
    assert parse_pins((FIX / ("virsh_vcpupin_old.txt" if old else "virsh_vcpupin.txt")).read_text())[2] == "0-31"
    orig = PIN.read(hv, lp)
    assert orig["map"].startswith("0:2;1:3;2:0-31") and orig["pinned"] == {"0": "2", "1": "3"}
    new = PIN.parse(lp, "0: 4-5 ; 1:6,7,8")
    assert new == "0:4-5;1:6-8"
    PIN.validate(hv, lp, new, Ctx(cpus=32))
    PIN.apply(hv, lp, new)
    assert ["virsh", "vcpupin", "fedora-vm", "0", "4-5", "--config", "--live"] in hv.calls
    assert PIN.looks_like(PIN.read(hv, lp), new) and not PIN.same(PIN.read(hv, lp), orig)
    PIN.restore(hv, lp, orig)
    assert PIN.same(PIN.read(hv, lp), orig)
    with pytest.raises(KnobError, match="VCPU:CPULIST"):
        PIN.parse(lp, "0=2")
    with pytest.raises(KnobError, match="no vCPU 99"):
        PIN.validate(hv, lp, "99:1", Ctx())


def test_hostile_knob_values_are_refused_before_any_command():
    with pytest.raises(KnobError):
        LQ.parse(loc("libvirt_queues", "vm;reboot"), 2)
    with pytest.raises(KnobError):
        PIN.parse(loc("libvirt_vcpupin", "fedora-vm"), "0:$(reboot)")
    with pytest.raises(KnobError):
        PVE.parse(loc("pve_queues", "101"), "4; reboot")
    with pytest.raises(KnobError):
        PVE.parse(loc("pve_queues", "101/net0;reboot"), 4)
