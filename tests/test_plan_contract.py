"""Issue 32: the plan is a contract. The dry run refuses every value the run refuses (one
case per knob kind, through both paths), study A on Proxmox names every VM restart with
its VMID and study host and needs the opt-in, the printed order is the run's order, and
the ETA counts reboots, VM restarts and idle windows and follows the measured tests.
Pure unit tests: nothing is connected (the addresses are documentation ones)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nettune.errors import SpecError
from nettune.knobs.registry import KINDS
from nettune.plan.points import expand_and_check
from nettune.studyfile.load import parse_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

BASE = '''name = "contract"
[target]
kind = "ssh"
[target.hosts.pve]
address = "192.0.2.10"
role = "hypervisor"
[target.hosts.vm1]
address = "192.0.2.11"
interface = "ens18"
vmid = 101
domain = "vm1"
allow_vm_restart = true
allow_link_reset = true
allow_reboot = true
[target.hosts.vm2]
address = "192.0.2.12"
interface = "ens18"
vmid = 102
domain = "vm2"
allow_vm_restart = true
allow_link_reset = true
allow_reboot = true
[workload]
server = "vm1"
client = "vm2"
duration = 1
[knobs]
"{key}" = {value}
[knobs.hosts]
"{key}" = {hosts}
'''

# per knob kind: a value (or key) the run refuses, and words of the refusal
REFUSED = {
    "amd_pstate": ("amd_pstate:mode", "turbo; reboot", "amd_pstate"),
    "cc": ("cc", "bbr; reboot", "not a congestion control name"),
    "channels": ("channels", 0, "out of range"),
    "cmdline": ("cmdline:mitigations", "off; reboot", "not a safe kernel parameter value"),
    "command": ("command:x", "", "a command knob is a table"),
    "cpu": ("cpu:smt", "maybe", "cpu:smt"),
    "cpufreq": ("cpufreq:governor", "x;y", "not a governor name"),
    "cpuidle": ("cpuidle:max_state", -3, "cpuidle"),
    "irq_affinity": ("irq_affinity", "x", "CPU list"),
    "libvirt_queues": ("libvirt_queues:vm1", 300, "out of range (1..256)"),
    "libvirt_vcpupin": ("libvirt_vcpupin:vm1", "x", "VCPU:CPULIST"),
    "mtu": ("mtu", 10, "out of range"),
    "offload": ("offload:tso", "maybe", "on or off"),
    "pve_queues": ("pve_queues:101/net0", 128, "out of range (1..64)"),
    "qdisc": ("qdisc", "fq; x", "not a qdisc name"),
    "ring": ("ring:rx", -1, "out of range"),
    "rps": ("rps", "zz", "hex CPU mask"),
    "sockbuf": ("sockbuf:max", "8Q", "size in bytes"),
    "sysctl": ("sysctl:kernel.randomize_va_space", 0, "never changed automatically"),
    "sysctl_field": ("sysctl_field:net.ipv4.tcp_rmem", "x", "sysctl_field:NAME:N"),
    "sysctl_unsafe": ("sysctl_unsafe:kernel.core_pattern", "core\x01x", "not a value of one line"),
    "tuned": ("tuned", "-x", "not a tuned profile name"),
    "txqueuelen": ("txqueuelen", -5, "out of range"),
    "xps": ("xps", "zz", "hex CPU mask"),
}
MODEL_STAGE = {"command", "sysctl", "sysctl_field"}  # refused by the study file's models already (the key's shape, the denylist)
HYPERVISOR_KINDS = {"pve_queues", "libvirt_queues", "libvirt_vcpupin"}


def _text(key: str, value, kind: str) -> str:
    hosts = '["pve"]' if kind in HYPERVISOR_KINDS else '["vm1", "vm2"]'
    return BASE.format(key=key, value=json.dumps(value), hosts=hosts)


def test_every_knob_kind_has_a_refused_case():
    assert sorted(REFUSED) == sorted(KINDS), "a new knob kind needs its refused value here"


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_the_dry_run_and_the_run_refuse_the_same_value_before_connecting(kind, tmp_path):
    """Both paths share the offline checks: the dry run, the run (which would otherwise
    try to connect to 192.0.2.x and fail differently) and loading the file refuse the same
    value with the same one line."""
    from nettune.commands.dry_run import dry_run
    from nettune.plan.study_file import parse_study
    from nettune.run.study import run_study
    from nettune.store.writer import StoreWriter

    key, value, words = REFUSED[kind]
    text = _text(key, value, kind)
    try:
        study = parse_spec(text, "c.toml")  # the models alone: what neither path has checked yet
    except SpecError as e:  # a key's shape: refused by the models, which every command loads first
        assert kind in MODEL_STAGE and str(e).startswith("c.toml:") and words in str(e)
        return
    assert kind not in MODEL_STAGE
    said = []
    with pytest.raises(SpecError) as e:
        dry_run(study, text, "c.toml")
    said.append(str(e.value))
    with StoreWriter(tmp_path / "r.db") as store, pytest.raises(SpecError) as e:
        run_study(study, store, text, "c.toml")
    said.append(str(e.value))
    with pytest.raises(SpecError) as e:
        parse_study(text, "c.toml")
    said.append(str(e.value))
    assert said[0] == said[1] == said[2], said
    assert said[0].startswith("c.toml:") and words in said[0] and "\n" not in said[0]


def test_the_cli_dry_run_refuses_in_one_line(tmp_path):
    from conftest import nettune

    f = tmp_path / "c.toml"
    f.write_text(_text("pve_queues:101/net0", 128, "pve_queues"))
    r = nettune("run", str(f), "--dry-run", timeout=120)
    out = (r.stdout + r.stderr).strip()
    assert r.returncode != 0 and len(out.splitlines()) == 1 and "128 is out of range (1..64)" in out and "Traceback" not in out


# -- study A on Proxmox -------------------------------------------------------------------

def _study_a(edit=lambda t: t):
    from nettune.commands.dry_run import dry_run
    from nettune.plan.study_file import parse_study

    text = edit((EXAMPLES / "study-a-proxmox.toml").read_text())
    study = parse_study(text, "a.toml")
    return study, text, dry_run(study, text, "a.toml")


def test_study_a_names_every_vm_restart_with_its_vmid_and_study_host():
    from nettune.plan.run_order import run_order

    study, text, d = _study_a()
    notes = [(p.index, n) for p in d.planned for n in p.notes]
    restarts = [(i, n) for i, n in notes if n.startswith("VM RESTART")]
    # 7 queue values, each set once for both VMs (runs = 3 does not multiply them), and
    # both put back after the last test
    assert len([n for _i, n in restarts if n.startswith("VM RESTART before this point")]) == 7 * 2
    assert len([n for _i, n in restarts if n.startswith("VM RESTART after the last test")]) == 2
    for _i, n in restarts:
        vm = re.search(r"restarts VM (\d+) \(study host (vm\d)\)", n)
        assert vm and {"101": "vm1", "102": "vm2"}[vm.group(1)] == vm.group(2), n
        assert f"qm set {vm.group(1)} --net0" in n and f"qm reboot {vm.group(1)}" in n
        assert "put back after the last test" in n or n.startswith("VM RESTART after the last test")
    resolved = expand_and_check(study, text, "a.toml")
    queues = {rp.point.index: rp.extra["knobs"]["pve_queues:101/net0"] for rp in resolved}
    order = run_order(study, resolved)
    assert sum(queues[a.point.index] != queues[b.point.index] for a, b in zip(order, order[1:])) == 6
    # the plan's ETA counts them: 14 changes and 2 restores, at reconnect_timeout (300 s) each
    assert "16 VM restarts" in d.expected
    assert d.expected.startswith("at most ")  # each restart at the most the run waits: a bound, not "about"


@pytest.mark.parametrize("edit, words", [
    (lambda t: t.replace("allow_vm_restart = true          # nettune may restart", "# nettune may restart"),
     "add allow_vm_restart = true to [target.hosts.vm1]"),
    (lambda t: t.replace('"pve_queues:102/net0" = ["pve"]', '"pve_queues:102/net0" = ["vm2"]'), "is not one"),
    (lambda t: t.replace('"pve_queues:102/net0" = ["pve"]\n', ""), "[knobs.hosts] must name"),
    (lambda t: t.replace('"pve_queues:102/net0"', '"pve_queues:110/net0"'), "VM 110, which is not one of the study's hosts"),
    (lambda t: t.replace("queues = [1, 2, 4, 8, 16, 32, 40]", "queues = [1, 128]"), "out of range (1..64)"),
])
def test_study_a_refuses_what_the_run_would(edit, words):
    with pytest.raises(SpecError) as e:
        _study_a(edit)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_study_a_printed_order_is_the_run_order():
    """The dry run lists each point where the run first reaches it, and its run-order
    line is the run's own slots (run_groups, which the run walks)."""
    from nettune.plan.run_order import run_groups

    study, text, d = _study_a()
    resolved = expand_and_check(study, text, "a.toml")
    slots = [s for g in run_groups(study, resolved) for s in g]
    assert [p.index for p in d.planned] == list(dict.fromkeys(s.point.index for s in slots))
    # every VM restart sits at a point where the queue count differs from the previous one
    queues = {rp.point.index: rp.extra["knobs"]["pve_queues:101/net0"] for rp in resolved}
    firsts = [p.index for p in d.planned if any(n.startswith("VM RESTART before") for n in p.notes)]
    assert [queues[i] for i in firsts] == [1, 2, 4, 8, 16, 32, 40]


# -- the ETA -------------------------------------------------------------------------------

LAB_COMMAND = '''name = "eta"
[target]
kind = "lab"
hosts = ["a"]
[workload]
engine = "command"
host = "a"
run = ["sleep", "1"]
{duration}
[sweep]
x = [1, 2, 3]
[repeat]
runs = 2
pause = 2
'''


def test_a_timed_command_counts_its_declared_duration_else_its_measured_runs():
    from nettune.plan.run_order import run_order
    from nettune.plan.study_file import parse_study
    from nettune.run.plan_time import RunClock, plan_time
    from nettune.run.workloads.base import OVERHEAD_GUESS

    declared = parse_study(text := LAB_COMMAND.format(duration="duration = 600"), "e.toml")
    resolved = expand_and_check(declared, text, "e.toml")
    t = plan_time(declared, resolved)
    assert t.tests >= 6 * 600 + 5 * 2 and not t.unknown  # 6 tests of 600 s and 5 pauses

    study = parse_study(text := LAB_COMMAND.format(duration=""), "e.toml")
    resolved = expand_and_check(study, text, "e.toml")
    t = plan_time(study, resolved)
    assert t.unknown and t.tests == pytest.approx(6 * OVERHEAD_GUESS + 5 * 2)  # said unknown, not guessed

    class Hosts:
        test_hosts = ["a"]

    order = run_order(study, resolved)
    clock = RunClock(study, resolved, Hosts(), [(s, 1) for s in order], {rp.point.index: 1 for rp in resolved})
    clock.slot_done(order[0], 300.0)  # the first build took 5 minutes: the other five will too
    assert clock.seconds_left() == pytest.approx(5 * 300 + 4 * 2)
    assert clock.tests_left() == 5
    clock.slot_done(order[1], 100.0)  # a measured point by its own mean, the others scaled by all measured
    left = clock.seconds_left()
    assert clock.tests_left() == 4 and left < 4 * 300 + 3 * 2 and left > 4 * 100


def test_reboots_vm_restarts_and_idle_windows_are_counted():
    from nettune.plan.study_file import parse_study
    from nettune.run.plan_time import plan_time

    text = (EXAMPLES / "study-c.toml").read_text()
    study = parse_study(text, "c.toml")
    resolved = expand_and_check(study, text, "c.toml")
    t = plan_time(study, resolved)
    # mitigations auto -> off -> back: study C's sequential order reboots for off, for auto (a
    # host whose line has no mitigations= needs none) and to restore, at reboot_timeout each
    assert len(t.reboots) == 3 and all(s == study.target.hosts["epyc"].reboot_timeout for s in t.reboots)
    assert t.idle == [120.0] * 24  # one idle-power window per configuration
    assert t.expected == pytest.approx(t.tests + sum(t.reboots) + 24 * 120)


def test_the_clock_learns_how_long_a_reboot_takes_once_one_is_behind():
    """Study C: three reboots, each counted at reboot_timeout until the first is behind;
    then the ones ahead count at what it took (the settings' time before its slot)."""
    from nettune.plan.run_order import run_order
    from nettune.plan.study_file import parse_study
    from nettune.run.plan_time import RunClock

    text = (EXAMPLES / "study-c.toml").read_text()
    study = parse_study(text, "c.toml")
    resolved = expand_and_check(study, text, "c.toml")

    class Hosts:
        test_hosts = ["epyc"]

    order = run_order(study, resolved)
    clock = RunClock(study, resolved, Hosts(), [(s, 1) for s in order], {rp.point.index: 1 for rp in resolved})
    timeout = study.target.hosts["epyc"].reboot_timeout
    first = min(at for _w, at, _s in clock.costly)
    ahead = [at for _w, at, _s in clock.costly if at > first]
    assert ahead, clock.costly  # a reboot after the first: the one to restore at least
    for slot in order[:first]:
        clock.slot_done(slot, 10.0, 0.5)  # settings without a reboot: nothing learned from them
    assert clock.disruptions_left() == pytest.approx((1 + len(ahead)) * timeout)
    left = clock.seconds_left()
    clock.slot_done(order[first], 10.0, 40.0)  # the reboot before this slot took 40 s
    assert clock.disruptions_left() == pytest.approx(len(ahead) * 40.0)  # each ahead counts 40 s now
    assert clock.seconds_left() < left - timeout
    clock.slot_done(order[first + 1], 10.0, timeout * 5)  # a setup longer than the timeout bounds nothing more
    assert all(v <= timeout for v in clock.took.values())


# -- the preflight ties each VM to its study host -----------------------------------------

def test_preflight_ties_the_vmid_to_the_study_host_by_the_nics_mac():
    """vmid = 101 on vm1: the preflight reads net0's MAC from `qm config 101` on the
    hypervisor and the MAC of vm1's interface; another machine's MAC is refused (the run
    would restart a VM that is not the study's), a missing one is "cannot tell"."""
    from hypervisor_fakes import FakePve, _Fake

    from nettune.commands.preflight import vm_ties
    from nettune.errors import NettuneError
    from nettune.knobs.items import SpecLocator
    from nettune.plan.study_file import parse_study

    class Guest(_Fake):
        def __init__(self, name: str, mac: str | None):
            super().__init__()
            self.name, self.interface, self.netns, self.on_this_machine = name, "ens18", None, False
            if mac is not None:
                self.files["/sys/class/net/ens18/address"] = mac + "\n"

        def read_text(self, path: str) -> str:
            if path not in self.files:
                raise FileNotFoundError(path)
            return self.files[path]

    pve = FakePve()
    pve.name, pve.interface, pve.netns, pve.on_this_machine = "pve", None, None, False
    text = _text("pve_queues:101/net0", 4, "pve_queues")
    study = parse_study(text, "c.toml")
    resolved = expand_and_check(study, text, "c.toml")

    class Target:
        def __init__(self, mac: str | None):
            self.hosts = {"pve": pve, "vm1": Guest("vm1", mac), "vm2": Guest("vm2", None)}

    said = vm_ties(study, Target("bc:24:11:3a:5f:01"), resolved, SpecLocator("c.toml", text))
    assert said == ["pve_queues:101/net0: VM 101 on pve is vm1 (its NIC's MAC BC:24:11:3A:5F:01 is vm1's ens18)"]
    with pytest.raises(NettuneError, match=r"VM 101's NIC has MAC BC:24:11:3A:5F:01 on pve, but vm1's ens18 has 52:54:00:00:00:02: "
                                           r"vmid = 101 in \[target.hosts.vm1\] names another VM"):
        vm_ties(study, Target("52:54:00:00:00:02"), resolved, SpecLocator("c.toml", text))
    (line,) = vm_ties(study, Target(None), resolved, SpecLocator("c.toml", text))
    assert line.startswith("pve_queues:101/net0: cannot tell that VM 101 is vm1")
    assert not any(c[:2] == ["qm", "set"] or c[:2] == ["qm", "reboot"] for c in pve.calls)  # read only


@pytest.mark.parametrize("key,value,kind", [("libvirt_queues:vm1/52:54:00:aa:bb:cc", 2, "libvirt_queues"),
                                            ("libvirt_vcpupin:vm1", "0:2", "libvirt_vcpupin")])
def test_preflight_ties_a_libvirt_domain_to_the_study_host_by_its_nics_mac(key, value, kind):
    """domain = "vm1": the preflight reads the domain's XML (`virsh dumpxml`) and compares
    the MAC of the NIC the knob acts on (libvirt_queues; every NIC for a pinning of the whole
    guest) with vm1's interface; before, libvirt's kinds gave none and every tie was
    "cannot tell". The XML is fedora-vm's three NICs (tests/fixtures/hypervisor)."""
    from hypervisor_fakes import FakeVirsh, _Fake

    from nettune.commands.preflight import vm_ties
    from nettune.errors import NettuneError
    from nettune.knobs.items import SpecLocator
    from nettune.plan.study_file import parse_study

    class Guest(_Fake):
        def __init__(self, name: str, mac: str):
            super().__init__()
            self.name, self.interface, self.netns, self.on_this_machine = name, "ens18", None, False
            self.files["/sys/class/net/ens18/address"] = mac + "\n"

    virsh = FakeVirsh()
    virsh.domain = "vm1"
    virsh.name, virsh.interface, virsh.netns, virsh.on_this_machine = "pve", None, None, False
    text = _text(key, value, kind)
    study = parse_study(text, "c.toml")
    resolved = expand_and_check(study, text, "c.toml")

    class Target:
        def __init__(self, mac: str):
            self.hosts = {"pve": virsh, "vm1": Guest("vm1", mac), "vm2": Guest("vm2", "52:54:00:00:00:09")}

    said = vm_ties(study, Target("52:54:00:aa:bb:cc"), resolved, SpecLocator("c.toml", text))
    assert said == [f"{key}: VM vm1 on pve is vm1 (its NIC's MAC 52:54:00:AA:BB:CC is vm1's ens18)"]
    other = "52:54:00:6b:3c:58" if kind == "libvirt_queues" else "52:54:00:00:00:02"  # another NIC of it / another machine
    with pytest.raises(NettuneError, match=r"VM vm1's NICs? ha(s|ve) MACs? .*52:54:00:AA:BB:CC.* on pve, but vm1's ens18 has "
                                           + other.upper() + r": domain = vm1 in \[target.hosts.vm1\] names another VM"):
        vm_ties(study, Target(other), resolved, SpecLocator("c.toml", text))
    assert all(c[:2] == ["virsh", "dumpxml"] for c in virsh.calls)  # read only
