"""The VM lab's parts that need no VM (issue 40): the study file's [target] kind = "vmlab",
the domain XML libvirt is given, the seed archive, the disk's boot sectors, the guests' tc
commands, and what an emulated CPU does to results, analyze and the report. The real
guests, libvirtd and GRUB are in tests/test_vmlab.py."""
import io
import json
import struct
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nettune.errors import SpecError
from nettune.plan.study_file import parse_study
from nettune.store.writer import StoreWriter
from nettune.studyfile.lab_link import LinkShape
from nettune.targets.vmlab import domains, guest_files, guest_image, vm_shaping

from conftest import nettune
from study_builders import study_a

BASE = """
name = "vmx"
[target]
kind = "vmlab"
{hosts}
[workload]
server = "server"
client = "client"
"""


def _study(hosts: str, extra: str = ""):
    return parse_study(BASE.format(hosts=hosts) + extra, "vm.toml")


def test_vmlab_target_defaults_and_the_hypervisor_added():
    s = _study("")
    assert s.target.guests == ["server", "client"] and s.target.hypervisors == ["hypervisor"]
    assert s.target.test_hosts == ["server", "client"] and not s.target.on_this_machine
    assert s.target.hosts["server"].memory == 384 and s.target.hosts["server"].allow_reboot
    assert not s.target.hosts["hypervisor"].allow_reboot  # this machine is never rebooted
    s = _study('[target.hosts.server]\nvcpus = 2\nmemory = "1G"\nqueues = 2\n[target.hosts.client]\n[target.hosts.kvm]\nrole = "hypervisor"\n')
    assert s.target.hosts["server"].memory == 1024 and s.target.hosts["server"].queues == 2
    assert s.target.hypervisors == ["kvm"] and "hypervisor" not in s.target.hosts


@pytest.mark.parametrize("hosts, words", [
    ('[target.hosts.server]\n[target.hosts.client]\n[target.hosts.hv]\nrole = "hypervisor"\nvcpus = 4\n', ["vcpus", "this machine"]),
    ('[target.hosts.server]\n[target.hosts.client]\n[target.hosts.hv]\nrole = "hypervisor"\nallow_reboot = true\n', ["never reboots"]),
    ('[target.hosts.server]\nmemory = "lots"\n[target.hosts.client]\n', ["memory", "'512M'"]),
    ('[target.hosts.server]\nvcpus = 0\n[target.hosts.client]\n', ["vcpus"]),
    ('[target.hosts."bad.name"]\n[target.hosts.server]\n[target.hosts.client]\n', ["bad.name", "domain"]),
    ('[target.hosts.server]\n[target.hosts.client]\n[target.hosts.a]\nrole = "hypervisor"\n[target.hosts.b]\nrole = "hypervisor"\n', ["one (this machine)"]),
    ('[target.hosts.server]\n[target.hosts.client]\n[target.link.other]\ndelay = "1ms"\n', ["other", "not a guest"]),

    # the guests' network config is a /24: a larger block of the range, fine for the lab, is not
    ('subnet = "198.18.40.0/23"\n[target.hosts.server]\n[target.hosts.client]\n', ["198.18.40.0/23", "a /24 inside 198.18.0.0/15"]),
    ('subnet = "10.0.0.0/24"\n[target.hosts.server]\n[target.hosts.client]\n', ["10.0.0.0/24", "benchmarking range"]),
])
def test_vmlab_target_refuses_with_one_line(hosts, words):
    with pytest.raises(SpecError) as e:
        _study(hosts)
    text = str(e.value)
    assert "\n" not in text.strip() and all(w in text for w in words), text


def test_a_point_revalidates_the_hypervisor_it_added():
    """plan.points.resolve dumps the target and validates it again per point."""
    from nettune.plan.points import expand_and_check

    s = _study("", '[sweep]\nstreams = [1, 2]\n[knobs]\n"libvirt_queues:server" = 2\n[knobs.hosts]\n"libvirt_queues:server" = ["hypervisor"]\n')
    points = expand_and_check(s)
    assert len(points) == 2 and points[0].target.hypervisors == ["hypervisor"]


def test_boot_knobs_need_a_guest_that_allows_reboots():
    """Loading the file runs the knobs' offline checks (knobs/offline.py): a reboot only of a
    guest that allows one, never of the hypervisor (this machine); a VM restart of a guest
    (libvirt_queues) needs no opt-in, the guests being the lab's own."""
    knob = '[knobs]\n"cmdline:mitigations" = "off"\n[knobs.hosts]\n"cmdline:mitigations" = ["server"]\n'
    _study("", knob)  # guests allow reboots by default
    with pytest.raises(SpecError, match="allow_reboot = true"):
        _study("[target.hosts.server]\nallow_reboot = false\n[target.hosts.client]\n", knob)
    with pytest.raises(SpecError, match="never reboots"):  # the hypervisor is this machine
        _study("", knob.replace('["server"]', '["hypervisor"]'))
    with pytest.raises(SpecError, match="name the guests"):  # no hosts named: every host, the hypervisor too
        _study("", '[knobs]\n"cmdline:mitigations" = "off"\n')
    _study("", '[knobs]\n"libvirt_queues:server" = 2\n[knobs.hosts]\n"libvirt_queues:server" = ["hypervisor"]\n')
    with pytest.raises(SpecError, match="not one of the study's hosts"):  # only the study's own guests
        _study("", '[knobs]\n"libvirt_queues:other" = 2\n[knobs.hosts]\n"libvirt_queues:other" = ["hypervisor"]\n')


def test_the_vmlab_kind_answers_from_the_study_alone():
    """targets/vmlab/vmlab_kind.py: the journal's gate, the dry run's addresses and knob
    devices, and `nettune hosts` without a lab (nothing connected, nothing created)."""
    import ipaddress

    from nettune.targets import TARGETS, footprint, server_address, target_kind

    s = parse_study(BASE.format(hosts='subnet = "198.18.40.0/24"\n[target.hosts.server]\n[target.hosts.client]\n'), "vm.toml")
    kind = target_kind(s)
    assert kind is TARGETS["vmlab"] and kind.name == "vmlab"
    fp = footprint(s)
    assert fp.subnets == [ipaddress.ip_network("198.18.40.0/24")] and not fp.machine and not fp.namespaces
    assert server_address(s, "server") == "198.18.40.10" and server_address(s, "client") == "198.18.40.11"
    assert kind.knob_os(s, "server") == ("linux", "eth0") and kind.knob_os(s, "hypervisor") == ("linux", None)
    rows = {r.name: r for r in kind.describe_hosts(s)}
    assert (rows["server"].address, rows["server"].port, rows["server"].user) == ("198.18.40.10", 22, "root")
    assert rows["hypervisor"].role == "hypervisor" and rows["hypervisor"].address == "198.18.40.1"
    kind.check_hosts(s, list(rows.values()))  # no lab of this study is up here
    assert all(not r.ok and "not up" in r.reason for r in rows.values())


def _guest(queues: int = 1) -> domains.GuestSpec:
    return domains.GuestSpec("server", "198.18.40.10", "02:11:22:33:44:55", "nvabcdet0", 2, 384, queues)


def test_domain_xml_is_what_libvirt_takes():
    xml = domains.domain_xml(_guest(4), "qemu", Path("/x/s.qcow2"), Path("/x/s.seed.tar"), "nvabcdebr", Path("/x/c.log"))
    root = ET.fromstring(xml)
    assert root.get("type") == "qemu" and root.findtext("name") == "server" and root.findtext("vcpu") == "2"
    assert root.find("features/acpi") is not None  # `virsh shutdown` is an ACPI button press
    nic = root.find("devices/interface")
    assert nic.get("type") == "bridge" and nic.find("source").get("bridge") == "nvabcdebr"
    assert nic.find("model").get("type") == "virtio" and nic.find("driver").get("queues") == "4"
    assert nic.find("driver").get("name") is None  # no backend forced (TCG would drop vhost anyway)
    disks = root.findall("devices/disk")
    assert [d.find("target").get("dev") for d in disks] == ["vda", "vdb"] and disks[1].find("readonly") is not None
    one = ET.fromstring(domains.domain_xml(_guest(1), "kvm", Path("/x/s.qcow2"), Path("/x/s.seed.tar"), "br", Path("/x/c.log")))
    assert one.get("type") == "kvm" and one.find("devices/interface/driver") is None  # libvirt's own form of one queue


def test_seed_is_a_tar_archive_readable_from_a_block_device(tmp_path):
    p = tmp_path / "seed.tar"
    domains.seed(p, {"etc/hostname": ("server\n", 0o644), "etc/ssh/ssh_host_ed25519_key": ("KEY", 0o600),
                     "root/.ssh/authorized_keys": ("ssh-ed25519 AAAA\n", 0o600)})
    data = p.read_bytes()
    assert len(data) % 512 == 0  # whole sectors: QEMU serves it as a raw disk
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        members = {m.name: m for m in t.getmembers()}
        assert t.extractfile("etc/hostname").read() == b"server\n"
        assert members["etc/ssh/ssh_host_ed25519_key"].mode == 0o600 and members["root/.ssh"].mode == 0o700
        assert all(m.uid == 0 for m in members.values())


def test_mbr_holds_one_bootable_partition_after_the_grub_gap(tmp_path):
    disk = tmp_path / "d.img"
    disk.write_bytes(b"\0" * (4 * 1024 * 1024))
    guest_image.mbr(disk, 4 * 1024 * 1024)
    raw = disk.read_bytes()
    assert raw[510:512] == b"\x55\xaa"
    boot, ptype, start, count = struct.unpack("<B3xB3xII", raw[446:462])
    assert (boot, ptype, start) == (0x80, 0x83, guest_image.PART_START) and start + count == len(raw) // 512


def test_default_grub_keeps_debians_file_and_adds_the_serial_console():
    template = Path("/usr/share/grub/default/grub")
    if not template.exists():
        pytest.skip("grub2-common is not installed (scripts/test.sh installs it with the VM lab's packages)")
    text = guest_files.default_grub(template.read_text())
    assert 'GRUB_CMDLINE_LINUX_DEFAULT="quiet"' in text and "GRUB_TIMEOUT=0" in text
    assert 'GRUB_CMDLINE_LINUX="console=ttyS0,115200"' in text and 'GRUB_TERMINAL="serial console"' in text
    from nettune.knobs.bootloader import grub_set, grub_value

    assert grub_value(text, "mitigations") is None  # the cmdline knob edits it as any Debian's
    assert grub_value(grub_set(text, "mitigations", "off"), "mitigations") == "off"


def test_guest_shaping_commands():
    delay = vm_shaping.shape_argv(LinkShape(delay="20ms", jitter="2ms", loss="0.5%"))
    assert delay == [["tc", "qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "netem", "limit", delay[0][10],
                      "delay", "10000us", "1000us", "loss", "0.5%"]]  # half of the round trip per guest
    both = vm_shaping.shape_argv(LinkShape(delay="4ms", rate="100M"))
    assert both[1][:9] == ["tc", "qdisc", "add", "dev", "eth0", "parent", "1:1", "handle", "2:"] and "100000000bit" in both[1]
    rate = vm_shaping.shape_argv(LinkShape(rate="1G"))
    assert rate[0][:8] == ["tc", "qdisc", "replace", "dev", "eth0", "root", "handle", "2:"] and len(rate) == 1
    assert vm_shaping.shape_argv(LinkShape()) == []


class _Ethtool:
    name = "g"

    def __init__(self, out: str):
        self.out = out

    def run(self, argv, timeout=30.0):
        from nettune.targets.base import CommandResult

        return CommandResult(argv, 0, self.out, "")


def test_guest_channels_read_from_ethtool():
    # `ethtool -l eth0` in a lab guest (ethtool 6.1, virtio_net, <driver queues='4'/>, 4 vCPUs)
    out = ("Channel parameters for eth0:\nPre-set maximums:\nRX:\t\tn/a\nTX:\t\tn/a\nOther:\t\tn/a\nCombined:\t4\n"
           "Current hardware settings:\nRX:\t\tn/a\nTX:\t\tn/a\nOther:\t\tn/a\nCombined:\t4\n")
    assert vm_shaping.channels(_Ethtool(out)) == {"combined_max": 4, "combined": 4}
    assert vm_shaping.channels(_Ethtool("")) == {"combined_max": None, "combined": None}


def _db(tmp_path, emulated: bool) -> Path:
    db = tmp_path / ("e.db" if emulated else "r.db")
    with StoreWriter(db) as s:
        sid = study_a(s)
        if emulated:  # what the vmlab target stores under TCG
            s.add_facts(sid, {"server": {"emulated": True, "accelerator": "tcg"}, "hypervisor": {"emulated": False, "accelerator": "tcg"}})
    return db


def test_an_emulated_study_gets_no_performance_verdicts(tmp_path):
    real = nettune("analyze", "A", "--db", str(_db(tmp_path, False)), "--format", "json", check=True)
    emu = nettune("analyze", "A", "--db", str(_db(tmp_path, True)), "--format", "json", check=True)
    r, e = json.loads(real.stdout), json.loads(emu.stdout)
    assert any("saturat" in f for f in r["findings"]) and any(p["curves"] for p in r["parameters"]) and r["efficiency"]
    assert e["headline"][0].startswith("emulated CPU: throughput shows behaviour, not performance (server ran on QEMU's TCG)")
    assert e["headline"][1].startswith("performance verdicts withheld") and len(e["headline"]) == 2
    assert e["findings"][:2] == e["headline"]
    assert not any("saturat" in f or "mattered" in f or "recommended" in f for f in e["findings"][2:])
    assert not any(p["curves"] or p["effect"] or p["comparisons"] for p in e["parameters"]) and not e["efficiency"]
    assert [p["mean"] for p in e["points"]] == [p["mean"] for p in r["points"]]  # the numbers stay
    # the summary draws nothing from the verdicts' absence: no "one point only", no "the verdicts below hold"
    assert e["summary"][0] == e["headline"][0] and e["summary"][-1].startswith("next: run the same study on hosts with real CPUs")
    assert not any(ln.startswith(("mattered", "recommended")) or "verdicts below hold" in ln for ln in e["summary"]), e["summary"]


def test_results_and_the_report_say_emulated_above_the_numbers(tmp_path):
    db = _db(tmp_path, True)
    out = nettune("results", "A", "--db", str(db), check=True).stdout
    assert out.index("emulated CPU: throughput shows behaviour") < out.index("Gbit/s")
    nettune("report", "A", "--db", str(db), "--out", str(tmp_path / "rep"), check=True)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert md.index("emulated CPU: throughput shows behaviour") < md.index("## Results")
    assert "emulated CPU: throughput shows behaviour" in (tmp_path / "rep" / "report.html").read_text()
    plain = nettune("results", "A", "--db", str(_db(tmp_path, False)), check=True).stdout
    assert "emulated" not in plain


def test_a_journaled_libvirt_queues_reading_keeps_the_domain_state_and_nothing_else():
    """The reading carries the domain's state (a restore starts a guest a killed apply left
    shut off); the journal is untrusted: only virsh's state words pass its check."""
    from nettune.knobs.base import KnobError, Loc
    from nettune.knobs.registry import get

    kind, loc = get("libvirt_queues"), Loc("libvirt_queues:vm1", "libvirt_queues", "vm1")
    kind.check_reading(loc, {"queues": 1, "driver": "<driver queues='1'/>", "state": "running"})
    kind.check_reading(loc, {"queues": 1, "driver": None, "state": "shut off"})
    kind.check_reading(loc, {"queues": 1, "driver": None})  # a journal written before the state was read
    for bad in ("rm -rf /", "running; virsh destroy vm1", 7):
        with pytest.raises(KnobError, match="domain state"):
            kind.check_reading(loc, {"queues": 1, "driver": None, "state": bad})
