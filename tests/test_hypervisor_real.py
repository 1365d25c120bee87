"""Hypervisor knobs on real configurations: libvirt domain XML from libvirt's and
virt-manager's test suites, Proxmox VM configs from qemu-server's test suite and netN
values posted in public threads (tests/fixtures/hypervisor/real, SOURCES.md).

For every file: apply then restore through the recorded-command fakes gives back the
original byte for byte (the persistent domain XML, the VM config file), and the change in
between touches only what it must.
"""
from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import pytest

from nettune.knobs.base import Ctx, KnobError, Loc
from nettune.knobs.kinds.libvirt_queues import LibvirtQueues, driver_tag, queues_in, set_queues
from nettune.knobs.kinds.libvirt_vcpupin import LibvirtVcpupin, config_pins
from nettune.knobs.kinds.proxmox_queues import (
    ProxmoxQueues, canonical_net, net_meaning, net_options, nic_model, parse_config, with_queues, without_queues,
)

from hypervisor_fakes import REAL, FakePve, FakeVirsh, print_net

LQ, PIN, PVE = LibvirtQueues(), LibvirtVcpupin(), ProxmoxQueues()
LIBVIRT = sorted((REAL / "libvirt").glob("*.xml"))
PROXMOX = sorted((REAL / "proxmox").glob("*.conf"))
NET_LINES = [ln.split("\t") for ln in (REAL / "proxmox" / "net_lines.tsv").read_text().splitlines() if ln and not ln.startswith("#")]


def _fast(kind):
    orig = kind.restart

    def quick(ex, lc, name, timeout=300.0, poll=2.0):
        return orig(ex, lc, name, timeout, 0.0)

    kind.restart = quick


_fast(LQ)
_fast(PVE)


def journaled(value):
    """The value as `nettune restore` gets it back from the journal (JSON)."""
    return json.loads(json.dumps(value))


def changed_lines(a: str, b: str) -> list[str]:
    return [ln for ln in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
            if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def interfaces(xml: str) -> list[str]:
    return re.findall(r"<interface\b.*?</interface>", xml, re.S)


# -- libvirt: queues -----------------------------------------------------------------------

def test_the_real_libvirt_set_is_varied():
    texts = {p.name: p.read_text() for p in LIBVIRT}
    assert len(texts) >= 12
    assert any("xmlns:qemu" in t for t in texts.values()) and any("libosinfo:" in t for t in texts.values())
    assert any("type='vhostuser'" in t for t in texts.values()) and any(" id='" in t.split("\n", 1)[0] for t in texts.values())
    assert any(len(interfaces(t)) >= 3 for t in texts.values()) and any('"' in t.split("\n", 1)[0] for t in texts.values())
    assert any("<driver queues=" in t for t in texts.values()) and any("<driver>" in t for t in texts.values())


CASES = [(p, i) for p in LIBVIRT for i in range(max(1, len(interfaces(p.read_text()))))]


@pytest.mark.parametrize("path,index", CASES, ids=[f"{p.name}/{i}" for p, i in CASES])
def test_libvirt_queues_apply_restore_is_byte_exact(path: Path, index: int):
    original = path.read_text()
    hv = FakeVirsh(xml=path)
    lq = Loc(f"libvirt_queues:{hv.domain}/{index}", "libvirt_queues", f"{hv.domain}/{index}")
    ifaces = interfaces(original)
    if not ifaces:
        with pytest.raises(KnobError, match="has no <interface>"):
            LQ.read(hv, lq)
        return
    if "type='virtio'" not in ifaces[index] and 'type="virtio"' not in ifaces[index]:
        with pytest.raises(KnobError, match="not virtio"):
            LQ.validate(hv, lq, 2, Ctx())
        assert not [c for c in hv.calls if c[1:2] == ["define"]]
        return
    before = journaled(LQ.read(hv, lq))
    new = before["queues"] * 2 + 2
    LQ.apply(hv, lq, new)
    after = LQ.read(hv, lq)
    assert after["queues"] == new and hv.state == "running"
    diff = changed_lines(original, hv.inactive)
    # one line changed (queues set in the <driver> start tag) or one line added (<driver queues='N'/>)
    assert len(diff) in (1, 2) and all("<driver" in ln for ln in diff), diff
    quote = "'" if "'" in ifaces[index] else '"'
    assert f"queues={quote}{new}{quote}" in diff[-1]
    assert ("name=\"vhost\"" not in hv.inactive.replace(original, "")) and "ns0:" not in hv.inactive
    LQ.restore(hv, lq, before)
    assert hv.inactive == original  # byte for byte
    assert journaled(LQ.read(hv, lq)) == before and not hv.files  # temp files gone
    assert [c[1] for c in hv.calls if c[0] == "virsh" and c[1] in ("define", "shutdown", "start")] == ["define", "shutdown", "start"] * 2


def test_libvirt_queues_changed_twice_in_a_session_comes_back_exactly():
    """Two points (4 queues, then 1) and a restore newest-first, as a session does."""
    path = REAL / "libvirt" / "net-virtio.x86_64-latest.xml"
    original = path.read_text()
    hv = FakeVirsh(xml=path)
    lq = Loc("libvirt_queues:QEMUGuest1", "libvirt_queues", "QEMUGuest1")
    first = journaled(LQ.read(hv, lq))
    LQ.apply(hv, lq, 4)
    second = journaled(LQ.read(hv, lq))
    assert second["driver"] == "<driver queues='4'/>"
    LQ.apply(hv, lq, 1)
    assert hv.inactive == original  # the element nettune added is gone again
    LQ.restore(hv, lq, second)
    assert driver_tag(hv.inactive, None) == "<driver queues='4'/>"
    LQ.restore(hv, lq, first)
    assert hv.inactive == original


def test_libvirt_queues_keeps_a_driver_with_children_and_other_attributes():
    xml = (REAL / "libvirt" / "net-virtio-disable-offloads.x86_64-latest.xml").read_text()
    four = set_queues(xml, None, 4)
    assert "<driver queues='4'>\n        <host csum='off'" in four
    assert set_queues(four, None, 1) == xml  # the attribute goes, the element with its children stays
    multiq = (REAL / "libvirt" / "net-vhostuser-multiq.x86_64-latest.xml").read_text()
    assert queues_in(multiq, "4") == 4 and driver_tag(multiq, "4") == "<driver queues='4'/>"
    assert set_queues(multiq, "4", 8) == multiq.replace("<driver queues='4'/>", "<driver queues='8'/>")
    assert set_queues(multiq, "4", 1) == multiq.replace("\n      <driver queues='4'/>", "")
    dq = (REAL / "libvirt" / "virt-install-linux2020.xml").read_text()
    assert '<driver queues="2"/>' in set_queues(dq, None, 2)  # the document's own quote
    attrs = "<driver name='vhost' rx_queue_size='256'/>"
    assert set_queues(xml.replace("<driver>", attrs.replace("/>", ">")), None, 2).count("<driver name='vhost' queues='2' rx_queue_size='256'>") == 1


def test_libvirt_queues_on_a_running_domain_dumpxml():
    path = REAL / "libvirt" / "qemuhotplug-base-live+interface-vdpa.xml"  # id='7', aliases, seclabel
    hv = FakeVirsh(xml=path)
    lq = Loc("libvirt_queues:hotplug", "libvirt_queues", "hotplug")
    LQ.validate(hv, lq, 4, Ctx())  # 4 vCPUs
    with pytest.raises(KnobError, match="4 vCPUs"):
        LQ.validate(hv, lq, 8, Ctx())
    before = journaled(LQ.read(hv, lq))
    assert before == {"queues": 1, "driver": None, "state": "running"}  # the state: a restore restarts a guest a killed apply left off
    LQ.apply(hv, lq, 4)
    assert "<model type='virtio'/>\n      <driver queues='4'/>\n      <alias name='net0'/>" in hv.inactive
    LQ.restore(hv, lq, before)
    assert hv.inactive == path.read_text()


# -- libvirt: vcpupin ----------------------------------------------------------------------

@pytest.mark.parametrize("path", LIBVIRT, ids=[p.name for p in LIBVIRT])
def test_libvirt_vcpupin_apply_restore_is_byte_exact(path: Path):
    original = path.read_text()
    hv = FakeVirsh(xml=path, host_cpus="0-7")
    lp = Loc(f"libvirt_vcpupin:{hv.domain}", "libvirt_vcpupin", hv.domain)
    before = journaled(PIN.read(hv, lp))
    assert before["pinned"] == {str(v): c for v, c in config_pins(original).items()} if config_pins(original) else before["pinned"] == {}
    vcpus = len(before["map"].split(";"))
    new = "0:5" if vcpus == 1 else "0:5;1:6-7"
    PIN.validate(hv, lp, new, Ctx(cpus=8))
    PIN.apply(hv, lp, new)
    assert PIN.looks_like(PIN.read(hv, lp), new) and "<vcpupin vcpu='0' cpuset='5'/>" in hv.inactive
    PIN.restore(hv, lp, before)
    assert hv.inactive == original  # an unpinned vCPU has no <vcpupin> again, an emptied <cputune> is gone
    assert PIN.same(PIN.read(hv, lp), before)
    pins_after = [c for c in hv.calls if c[:2] == ["virsh", "vcpupin"] and len(c) > 3]
    assert not any(c[3] == "0-7" and "--config" in c for c in pins_after)  # never "pinned to every CPU"


def test_libvirt_vcpupin_restores_only_what_it_changed():
    path = REAL / "libvirt" / "cputune.x86_64-latest.xml"  # vCPU 0 and 1 pinned, 2 and 3 not
    hv = FakeVirsh(xml=path, host_cpus="0-3")
    lp = Loc("libvirt_vcpupin:QEMUGuest1", "libvirt_vcpupin", "QEMUGuest1")
    before = journaled(PIN.read(hv, lp))
    assert before == {"map": "0:0;1:1;2:0-3;3:0-3", "pinned": {"0": "0", "1": "1"}}
    PIN.apply(hv, lp, "0:2;2:3")
    hv.calls.clear()
    PIN.restore(hv, lp, before)
    assert hv.inactive == path.read_text()
    config = [c for c in hv.calls if "--config" in c]
    live = [c for c in hv.calls if "--live" in c]
    assert config == [["virsh", "vcpupin", "QEMUGuest1", "0", "0", "--config"]]  # vCPU 1 untouched
    assert sorted(c[3] for c in live) == ["0", "2"] and ["virsh", "define", "/tmp/nettune-libvirt.Ab12Cd"] in hv.calls


def test_libvirt_vcpupin_on_a_shut_off_domain_needs_no_live_pin():
    path = REAL / "libvirt" / "qemu-ns.xml"  # qemu: namespace, one vCPU, no <cputune>
    hv = FakeVirsh(xml=path, host_cpus="0-3", state="shut off")
    lp = Loc("libvirt_vcpupin:QEMUGuest1", "libvirt_vcpupin", "QEMUGuest1")
    before = journaled(PIN.read(hv, lp))
    PIN.apply(hv, lp, "0:2")
    assert "  <cputune>\n    <vcpupin vcpu='0' cpuset='2'/>\n  </cputune>\n" in hv.inactive
    PIN.restore(hv, lp, before)
    assert hv.inactive == path.read_text() and not [c for c in hv.calls if "--live" in c]


# -- Proxmox -------------------------------------------------------------------------------

def test_the_real_proxmox_set_is_varied():
    confs = {p.name: p.read_text() for p in PROXMOX}
    assert len(confs) >= 20
    models = {nic_model(parse_config(t)["net0"]) for t in confs.values() if "net0" in parse_config(t)}
    assert models == {"virtio", "e1000", "vmxnet3"}
    assert any(re.search(r"^\[", t, re.M) for t in confs.values()) and any("\n#" in t for t in confs.values())
    assert any("net0" not in parse_config(t) for t in confs.values())


@pytest.mark.parametrize("canonical", [False, True], ids=["stored-as-given", "qm-canonical"])
@pytest.mark.parametrize("path", PROXMOX, ids=[p.name for p in PROXMOX])
def test_proxmox_queues_apply_restore_is_byte_exact(path: Path, canonical: bool):
    original = path.read_text()
    pve = FakePve(conf=path, canonical=canonical)
    lq = Loc("pve_queues:101/net0", "pve_queues", "101/net0")
    cfg = parse_config(original)
    if "net0" not in cfg:
        with pytest.raises(KnobError, match="has no net0"):
            PVE.read(pve, lq)
        return
    if nic_model(cfg["net0"]) != "virtio":
        with pytest.raises(KnobError, match=f"is a {nic_model(cfg['net0'])} NIC"):
            PVE.validate(pve, lq, 2, Ctx())
        return
    ctx = Ctx()
    PVE.validate(pve, lq, 1, ctx)
    assert not ctx.notes  # qemu-server's own tests write lines in qemu-server's own form
    before = journaled(PVE.read(pve, lq))
    PVE.apply(pve, lq, 4)
    assert PVE.read(pve, lq)["queues"] == 4
    diff = changed_lines(original, pve.conf_text())
    assert len(diff) == 2 and diff[0].startswith("-net0: ") and diff[1].startswith("+net0: ")
    assert without_queues(diff[1][len("+net0: "):]) == diff[0][len("-net0: "):]  # only queues= added
    PVE.restore(pve, lq, before)
    assert pve.conf_text() == original  # byte for byte, snapshot sections and comments included


@pytest.mark.parametrize("line,source", NET_LINES, ids=[f"{i}" for i in range(len(NET_LINES))])
def test_proxmox_net_lines_follow_qemu_servers_schema(line: str, source: str):
    model = nic_model(line)
    assert model in ("virtio", "e1000", "vmxnet3"), (line, source)
    assert net_meaning(canonical_net(line)) == net_meaning(line)  # same meaning in any order
    assert canonical_net(line) == print_net(line)  # and the fake's qm agrees
    four = with_queues(line, 4)
    assert net_meaning(four)["queues"] == "4" and nic_model(four) == model
    old = [k for k, _v in net_options(line)]
    new = [k for k, _v in net_options(four)]
    if "queues" in old:
        assert new == old  # changed in place, same position
    else:
        assert [k for k in new if k != "queues"] == old and without_queues(four) == line


@pytest.mark.parametrize("line", [
    "model=virtio,macaddr=A2:C0:43:77:08:A0,bridge=vmbr0",
    "bridge=vmbr0,virtio=A2:C0:43:77:08:A0",
    "virtio,bridge=vmbr0",
    "model=virtio,macaddr=XX:XX:XX:XX:XX:XX,bridge=vmbr0,queues=2",
])
def test_proxmox_valid_line_forms_are_accepted_and_restored(tmp_path: Path, line: str):
    base = (REAL / "proxmox" / "netdev-7.1.conf").read_text()
    conf = tmp_path / "101.conf"
    conf.write_text(base.replace("virtio=A2:C0:43:77:08:A0,bridge=vmbr0,mtu=900", line))
    pve = FakePve(conf=conf)
    lq = Loc("pve_queues:101/net0", "pve_queues", "101/net0")
    ctx = Ctx()
    PVE.validate(pve, lq, 3, ctx)  # 3 cores
    assert ctx.notes and "qemu-server's own form" in ctx.notes[0]  # these lines are not canonical
    before = journaled(PVE.read(pve, lq))
    PVE.apply(pve, lq, 3)
    if "queues=2" in line:
        assert pve.queues_line() == "net0: " + line.replace("queues=2", "queues=3")  # same position
    else:
        assert pve.queues_line() == f"net0: {line},queues=3"
    PVE.restore(pve, lq, before)
    assert pve.conf_text() == conf.read_text()


def test_proxmox_queues_goes_where_qm_would_put_it():
    assert with_queues("virtio=A2:C0:43:77:08:A0,bridge=vmbr0,firewall=1,rate=100,tag=5", 4) == \
        "virtio=A2:C0:43:77:08:A0,bridge=vmbr0,firewall=1,queues=4,rate=100,tag=5"
    line = "virtio=A2:C0:43:77:08:A0,bridge=vmbr0,firewall=1,rate=100,tag=5"
    assert with_queues(line, 4) == print_net(with_queues(line, 4))  # what qm set stores: no reordering


def test_proxmox_noncanonical_line_restores_with_the_same_meaning_on_a_real_qm(tmp_path: Path):
    """qm set rewrites a hand-written line in qemu-server's form: documented, not hidden."""
    conf = tmp_path / "101.conf"
    conf.write_text((REAL / "proxmox" / "netdev-7.1.conf").read_text().replace(
        "virtio=A2:C0:43:77:08:A0,bridge=vmbr0,mtu=900", "bridge=vmbr0,mtu=900,virtio=A2:C0:43:77:08:A0"))
    pve = FakePve(conf=conf, canonical=True)
    lq = Loc("pve_queues:101/net0", "pve_queues", "101/net0")
    before = journaled(PVE.read(pve, lq))
    PVE.apply(pve, lq, 2)
    PVE.restore(pve, lq, before)
    assert pve.queues_line() == "net0: virtio=A2:C0:43:77:08:A0,bridge=vmbr0,mtu=900"
    assert PVE.same(PVE.read(pve, lq), before)  # the restore check sees the original value


# -- through the journal, as `nettune restore` after kill -9 -------------------------------

@pytest.mark.parametrize("kind,arg,fake,new", [
    ("libvirt_queues", "test/1", lambda: FakeVirsh(xml=REAL / "libvirt" / "net-coalesce.x86_64-latest.xml"), 2),
    ("libvirt_vcpupin", "QEMUGuest1", lambda: FakeVirsh(xml=REAL / "libvirt" / "cputune.x86_64-latest.xml", host_cpus="0-3"), "2:1;3:2"),
    ("pve_queues", "101/net0", lambda: FakePve(conf=REAL / "proxmox" / "restore-139.conf"), 2),
])
def test_restore_from_the_journal_is_byte_exact(tmp_path, monkeypatch, kind, arg, fake, new):
    from nettune.knobs.journal import Journal
    from nettune.knobs.places import Place
    from nettune.knobs.registry import KINDS
    from nettune.knobs.restore import restore_changes

    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    ex = fake()
    snapshot = (lambda: ex.inactive) if isinstance(ex, FakeVirsh) else ex.conf_text
    before_text = snapshot()
    k = KINDS[kind]
    loc = Loc(f"{kind}:{arg}", kind, arg)
    place = Place("hv", "remote", ex)
    j = Journal()
    sid = j.begin("s", None)
    original = k.read(ex, loc)
    j.change(sid, 1, "s", "hv", loc.record(), {"type": "remote", "key": "remote:hv", "label": "hv"}, original, new)
    k.apply(ex, loc, new)
    j.actual(sid, 1, k.read(ex, loc))
    assert snapshot() != before_text
    (session,) = j.open_sessions()  # what a later `nettune restore` reads back
    out = restore_changes(j, sid, session.changes, lambda rec: (place, ""))
    assert [r for r, _ in out.lines] == ["restored"] and not out.warnings
    assert snapshot() == before_text


@pytest.mark.parametrize("killed_after_the_restart", [False, True])
def test_a_chain_of_changes_goes_back_with_one_restart(tmp_path, monkeypatch, killed_after_the_restart):
    """Study A's queues 1 -> 2 -> 4 on one VM: restore puts back the first original at once
    (one `virsh shutdown`, not one per change), and both changes are journaled done; after a
    kill between that restart and its journal record, the next restore finds the original in
    force and ends the session, never taking it for someone else's change."""
    from nettune.knobs.journal import Journal
    from nettune.knobs.places import Place
    from nettune.knobs.restore import restore_changes

    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    ex = FakeVirsh(xml=REAL / "libvirt" / "net-coalesce.x86_64-latest.xml")
    before_text = ex.inactive
    loc = Loc("libvirt_queues:test/1", "libvirt_queues", "test/1")
    place = {"type": "remote", "key": "remote:hv", "label": "hv"}
    j = Journal()
    sid = j.begin("s", None)
    for seq, new in ((1, 2), (2, 4)):
        j.change(sid, seq, "s", "hv", loc.record(), place, LQ.read(ex, loc), new)
        LQ.apply(ex, loc, new)
        j.actual(sid, seq, LQ.read(ex, loc))
    (session,) = j.open_sessions()
    if killed_after_the_restart:
        LQ.restore(ex, loc, session.changes[0].original)  # the chain's restore ran; its record did not
    ex.calls.clear()
    out = restore_changes(j, sid, session.changes, lambda rec: (Place("hv", "remote", ex), ""))
    assert ex.inactive == before_text and not out.warnings and not out.failed, out.lines
    shutdowns = [c for c in ex.calls if "shutdown" in c]
    assert len(shutdowns) == (0 if killed_after_the_restart else 1), ex.calls
    assert [r for r, _ in out.lines] == (["unchanged"] if killed_after_the_restart else ["restored"])
    assert [x.changes for x in j.open_sessions()] == [[]]  # both changes done: nothing left for `nettune restore`


def test_a_line_someone_else_changed_since_is_left_alone(tmp_path, monkeypatch):
    from nettune.knobs.journal import Journal
    from nettune.knobs.places import Place
    from nettune.knobs.restore import restore_changes

    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    pve = FakePve(conf=REAL / "proxmox" / "restore-139.conf")
    loc = Loc("pve_queues:101/net0", "pve_queues", "101/net0")
    j = Journal()
    sid = j.begin("s", None)
    j.change(sid, 1, "s", "hv", loc.record(), {"type": "remote", "key": "remote:hv", "label": "hv"}, PVE.read(pve, loc), 2)
    PVE.apply(pve, loc, 2)
    j.actual(sid, 1, PVE.read(pve, loc))
    pve.run(["qm", "set", "101", "--net0", "virtio=7A:6C:A5:8B:11:93,bridge=vmbr1,firewall=1,queues=2"])  # an admin moves the NIC
    pve.run(["qm", "reboot", "101"])
    (session,) = j.open_sessions()
    out = restore_changes(j, sid, session.changes, lambda rec: (Place("hv", "remote", pve), ""))
    assert [r for r, _ in out.lines] == ["left"] and "changed by someone else" in out.warnings[0]
    assert pve.queues_line() == "net0: virtio=7A:6C:A5:8B:11:93,bridge=vmbr1,firewall=1,queues=2"
