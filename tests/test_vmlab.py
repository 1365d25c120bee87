"""The VM lab on real QEMU guests and a real (private) libvirtd (issue 40).

One lab for the module (`nettune lab up FILE --vms`: two guests booted by GRUB from a disk
image, Debian's kernel, sshd; the hypervisor's sshd in libvirtd's mount namespace), then
study A in miniature through libvirt_queues, libvirt_vcpupin, study C's
cmdline:mitigations=off with its reboots, a kill -9 between the boot configuration's edit
and the reboot followed by `nettune restore`, and netem delay on the guests' links.
Checks go around nettune: `virsh` on the lab's libvirtd, the QEMU vCPU threads' affinity
from /proc, and OpenSSH's own client into the guests.

Run alone (pytest tests/test_vmlab.py): lab up, study A on one guest (one restart and its
restore), vcpupin, delay, lab status. NETTUNE_VM_TESTS=all adds study C's reboots, the kill -9
cases and study A on both guests (minutes under TCG); CI (scripts/test.sh) sets it, and runs this module beside
the rest of the suite in namespaces of its own (scripts/isolated.sh). In a private PID namespace
(`unshare --pid --fork`), PID 1 must reap orphans, or libvirtd waits for its QEMU
capability probe to die and never answers: run pytest under a shell (`bash -c 'pytest
...; exit $?'`), not as PID 1 itself. Skipped, with the reason, where the VM lab cannot run (not root, or QEMU,
libvirt or GRUB's packages missing: `nettune setup --vms` installs them).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import IS_ROOT, nettune

NAME = "nt-vmtest"
LAB = """
name = "nt-vmtest"
[target]
kind = "vmlab"
[target.hosts.server]
vcpus = 4
memory = 384
[target.hosts.client]
vcpus = 4
memory = 384
[target.hosts.hv]
role = "hypervisor"
"""


def _cannot() -> str | None:
    if not IS_ROOT:
        return "the VM lab needs root (libvirtd, QEMU, the lab bridge)"
    from nettune.setup_tools import missing_vm_packages

    missing = missing_vm_packages()
    if missing:
        return f"the VM lab's packages are missing here: {', '.join(missing)} (scripts/test.sh installs them: nettune setup --vms)"
    r = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"qemu-system-x86_64 does not run here: {(r.stderr or r.stdout).strip()[:200]}"
    return None


CANNOT = _cannot()
pytestmark = pytest.mark.skipif(CANNOT is not None, reason=CANNOT or "")
# Run alone, the VM part stays short (one lab booted for the module, one guest restart pair);
# the guest reboots and the kill -9 cases take minutes under TCG and run with
# NETTUNE_VM_TESTS=all, which CI sets (scripts/test.sh, docs/development.md).
ALL = os.environ.get("NETTUNE_VM_TESTS") == "all"
long_vm = pytest.mark.skipif(not ALL, reason="guest reboots and kill -9 under TCG take minutes: NETTUNE_VM_TESTS=all runs this (docs/development.md)")


def _write(tmp: Path, name: str, body: str) -> Path:
    f = tmp / name
    f.write_text(LAB + body)
    return f


class Lab:
    """The module's lab, seen from outside nettune."""

    def __init__(self, state: Path, tmp: Path):
        from nettune.targets.vmlab import vmlab
        from nettune.targets.vmlab.hypervisor import Hypervisor

        self.state, self.tmp = state, tmp
        self.rec = vmlab.read_record(NAME)
        self.dir = vmlab.lab_dir(NAME)
        self.hv = Hypervisor(self.dir)
        self.key, self.known = self.rec["keys"]["user"], self.rec["keys"]["known_hosts"]
        self.addr = {g["name"]: g["address"] for g in self.rec["shape"]["guests"]}

    def env(self) -> dict[str, str]:
        return {"NETTUNE_STATE_DIR": str(self.state)}

    def virsh(self, *args: str) -> str:
        return self.hv.virsh(*args).stdout

    def ssh(self, host: str, command: str, timeout: float = 60) -> str:
        """OpenSSH's client into a guest, checking its host key against the lab's known_hosts."""
        r = subprocess.run(["ssh", "-i", self.key, "-o", f"UserKnownHostsFile={self.known}", "-o", "StrictHostKeyChecking=yes",
                            "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", f"root@{self.addr[host]}", command],
                           capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, f"ssh {host} {command!r}: {r.stderr.strip()}"
        return r.stdout

    def wait_ssh(self, host: str, timeout: float = 180) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            r = subprocess.run(["ssh", "-i", self.key, "-o", f"UserKnownHostsFile={self.known}", "-o", "StrictHostKeyChecking=yes",
                                "-o", "BatchMode=yes", "-o", "ConnectTimeout=3", f"root@{self.addr[host]}", "true"], capture_output=True)
            if r.returncode == 0:
                return
            time.sleep(1)
        raise AssertionError(f"{host} did not answer over ssh within {timeout:.0f}s")

    def boots(self, host: str) -> int:
        """How many times the guest came up (its rcS prints a line on the serial console)."""
        return (self.dir / f"console-{host}.log").read_text(errors="replace").count("NETTUNE-GUEST-UP")

    def vcpu_affinity(self, dom: str) -> dict[int, set[int]]:
        """{vCPU: CPUs its QEMU thread may run on}, from /proc (libvirt names them 'CPU N/TCG' or 'CPU N/KVM')."""
        pid = int((self.dir / "libvirt" / "run" / "qemu" / f"{dom}.pid").read_text().split()[0])
        out = {}
        for tid in os.listdir(f"/proc/{pid}/task"):
            comm = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            m = re.match(r"CPU (\d+)/(TCG|KVM)$", comm)
            if m:
                out[int(m.group(1))] = os.sched_getaffinity(int(tid))
        return out


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vmlab")
    state = tmp / "state"  # the knob journal of these tests only
    f = _write(tmp, "lab.toml", '[workload]\nserver = "server"\nclient = "client"\n')
    up = nettune("lab", "up", str(f), "--vms", timeout=900, env={"NETTUNE_STATE_DIR": str(state)})
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "VM lab nt-vmtest is up" in up.stdout and "hypervisor" in up.stdout
        yield Lab(state, tmp)
    finally:
        down = nettune("lab", "down", NAME, "--force", timeout=300, env={"NETTUNE_STATE_DIR": str(state)})
        if up.returncode == 0:  # a failed `lab up` removed what it made: `lab down` then finds no lab
            assert down.returncode == 0, down.stdout + down.stderr
        assert nothing_left() == {}, nothing_left()


def nothing_left() -> dict:
    from nettune.targets.vmlab import vmlab

    left: dict = {}
    links = [n for n in os.listdir("/sys/class/net") if vmlab.VM_LINK.match(n)]
    if links:
        left["links"] = links
    if vmlab.lab_dir(NAME).exists():
        left["lab dir"] = str(vmlab.lab_dir(NAME))
    procs = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = Path(f"/proc/{d}/cmdline").read_bytes()
                state = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z" and str(vmlab.lab_dir(NAME)).encode() in cmd:
                procs.append(d + ":" + cmd.split(b"\0")[0].decode())
    if procs:
        left["processes"] = procs
    from nettune.targets.lab.lab_layout import default_subnet

    routes = subprocess.run(["ip", "route", "show", "type", "unreachable"], capture_output=True, text=True).stdout
    if str(default_subnet(NAME)) in routes:
        left["routes"] = routes
    return left


def _run(lab: Lab, f: Path, progress=None):
    from nettune import load_study
    from nettune.run.study import run_study
    from nettune.store.writer import StoreWriter

    os.environ["NETTUNE_STATE_DIR"] = str(lab.state)
    try:
        with StoreWriter(lab.tmp / f"{f.stem}.db") as store:
            out = run_study(load_study(f), store, f.read_text(), str(f), progress=progress, doctor=False)
            return out, store.runs(out.study_id), store.facts(out.study_id)
    finally:
        os.environ.pop("NETTUNE_STATE_DIR", None)


def test_study_a_in_miniature_queues_per_point_and_definitions_back(lab):
    """libvirt_queues x streams: every run stores the queue count the guests' own ethtool
    reports, and libvirt's inactive definitions end as they began. Each queue change
    restarts the guest (about 20 s under TCG on an idle machine, several times that on a
    loaded one), so the default run changes one guest once (queues {1, 2}: two restarts,
    the apply and the restore); NETTUNE_VM_TESTS=all runs the issue's whole miniature,
    {1, 2, 4} on both guests (six restarts)."""
    guests, queues = (("server", "client"), [1, 2, 4]) if ALL else (("client",), [1, 2])
    before = {d: lab.virsh("dumpxml", "--inactive", d) for d in ("server", "client")}
    knobs = "".join(f'"libvirt_queues:{g}" = "{{queues}}"\n' for g in guests)
    hosts = "".join(f'"libvirt_queues:{g}" = ["hv"]\n' for g in guests)
    f = _write(lab.tmp, "a.toml", f"""
[workload]
server = "server"
client = "client"
duration = 1
parallel = "{{streams}}"
[sweep]
queues = {queues}
mult = [1, 2]
streams = "{{queues}} * {{mult}}"
[knobs]
{knobs}[knobs.hosts]
{hosts}""")
    out, runs, facts = _run(lab, f)
    assert out.status == "done" and out.failed == 0 and not out.warnings, (out, [r.error for r in runs])
    assert sorted((r["point"]["queues"], r["point"]["streams"]) for r in runs) == sorted((q, q * m) for q in queues for m in (1, 2))
    for r in runs:
        q = r["point"]["queues"]
        for g in ("server", "client"):  # what the guest's kernel got from QEMU, per point
            want = q if g in guests else 1
            assert r.settings["guest_nic"][g] == {"combined_max": want, "combined": want}, (r["point"], r.settings["guest_nic"])
        assert r.receiver_bps and r.receiver_bps > 0
        assert r.cpu_extra.get("hypervisor:hv") is not None  # study A's hypervisor CPU column
        assert r.settings["vmlab"]["emulated"] == (lab.rec["accel"]["name"] == "tcg")
    assert {d: lab.virsh("dumpxml", "--inactive", d) for d in ("server", "client")} == before  # libvirt's own dump
    for g in guests:
        assert re.search(r"Combined:\s+1\s*$", lab.ssh(g, "ethtool -l eth0"), re.M)  # running with one queue again
    assert facts["server"]["emulated"] == (lab.rec["accel"]["name"] == "tcg") and facts["server"]["vm"]["vcpus"] == 4


def test_vcpupin_applied_and_restored(lab):
    from nettune.knobs.kinds.libvirt_vcpupin import parse_pins
    from nettune.run.study import NoProgress

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("pinning vCPUs apart needs two CPUs on this machine")
    a, b = cpus[0], cpus[1]
    map_before, xml_before, aff_before = lab.virsh("vcpupin", "client"), lab.virsh("dumpxml", "--inactive", "client"), lab.vcpu_affinity("client")
    assert len(aff_before) == 4 and all(len(s) >= 2 for s in aff_before.values())
    seen: dict = {}

    class Watch(NoProgress):
        def test_end(self, slot, result, seconds):  # while the point's settings are in force
            seen["map"] = parse_pins(lab.virsh("vcpupin", "client"))
            seen["aff"] = lab.vcpu_affinity("client")
            seen["xml"] = lab.virsh("dumpxml", "--inactive", "client")

    f = _write(lab.tmp, "pin.toml", f"""
[workload]
server = "server"
client = "client"
duration = 1
[knobs]
"libvirt_vcpupin:client" = "0:{b};1:{a}"
[knobs.hosts]
"libvirt_vcpupin:client" = ["hv"]
""")
    from nettune import load_study
    from nettune.commands.preflight import preflight_report

    os.environ["NETTUNE_STATE_DIR"] = str(lab.state)
    try:  # the preflight ties the domain to the study host by MAC on a real libvirtd, changing nothing
        said = preflight_report(load_study(f), f.read_text(), str(f))
    finally:
        os.environ.pop("NETTUNE_STATE_DIR", None)
    assert any(line.startswith("libvirt_vcpupin:client: VM client on hv is client (its NIC's MAC ") for line in said), said
    assert lab.virsh("vcpupin", "client") == map_before
    out, runs, _ = _run(lab, f, Watch())
    assert out.status == "done" and out.failed == 0 and not out.warnings
    assert seen["map"][0] == str(b) and seen["map"][1] == str(a)
    assert seen["aff"][0] == {b} and seen["aff"][1] == {a} and seen["aff"][2] == aff_before[2]  # the threads themselves
    assert f"<vcpupin vcpu='0' cpuset='{b}'/>" in seen["xml"]  # --config too
    assert lab.virsh("vcpupin", "client") == map_before and lab.virsh("dumpxml", "--inactive", "client") == xml_before
    assert lab.vcpu_affinity("client") == aff_before


def _grub_files(lab: Lab) -> tuple[str, str]:
    return lab.ssh("server", "cat /etc/default/grub"), lab.ssh("server", "cat /boot/grub/grub.cfg")


# one timed command on the server guest while its kernel boots with mitigations=off (study C's
# cmdline knob): a reboot to apply, one to restore
MITIGATIONS_OFF_ON_SERVER = """
[workload]
engine = "command"
host = "server"
run = ["cat", "/proc/cmdline"]
[knobs]
"cmdline:mitigations" = "off"
[knobs.hosts]
"cmdline:mitigations" = ["server"]
"""


@long_vm
def test_cmdline_mitigations_off_reboots_into_it_and_one_reboot_restores(lab):
    from nettune.run.study import NoProgress

    grub0, cfg0 = _grub_files(lab)
    assert "mitigations" not in lab.ssh("server", "cat /proc/cmdline")
    boots0, boot_id0 = lab.boots("server"), lab.ssh("server", "cat /proc/sys/kernel/random/boot_id")
    seen: dict = {}

    class Watch(NoProgress):
        def test_end(self, slot, result, seconds):
            seen["cmdline"] = lab.ssh("server", "cat /proc/cmdline").split()
            seen["v1"] = lab.ssh("server", "cat /sys/devices/system/cpu/vulnerabilities/spectre_v1").strip()
            seen["default"], seen["cfg"] = _grub_files(lab)

        def message(self, text):
            seen.setdefault("said", []).append(text)

    f = _write(lab.tmp, "c.toml", MITIGATIONS_OFF_ON_SERVER)
    out, runs, _ = _run(lab, f, Watch())
    assert out.status == "done" and out.failed == 0 and not out.warnings, (out, [r.error for r in runs])
    assert "mitigations=off" in seen["cmdline"] and seen["v1"].startswith("Vulnerable")  # the guest kernel booted with it
    # its time counted the two reboots at reboot_timeout, and the run said that this is a bound
    assert any("2 reboot(s) or VM restart(s)" in t and "upper bound" in t for t in seen["said"]), seen["said"]
    assert 'GRUB_CMDLINE_LINUX_DEFAULT="quiet mitigations=off"' in seen["default"] and "mitigations=off" in seen["cfg"]  # update-grub ran
    assert "mitigations" not in lab.ssh("server", "cat /proc/cmdline")
    assert lab.ssh("server", "cat /sys/devices/system/cpu/vulnerabilities/spectre_v1").startswith("Mitigation")
    assert _grub_files(lab) == (grub0, cfg0)  # byte for byte, update-grub's output included
    assert lab.boots("server") == boots0 + 2 and lab.ssh("server", "cat /proc/sys/kernel/random/boot_id") != boot_id0  # one to apply, one to restore


@long_vm
def test_kill_9_between_edit_and_reboot_then_restore(lab):
    grub0, cfg0 = _grub_files(lab)
    cmdline0 = lab.ssh("server", "cat /proc/cmdline")
    f = _write(lab.tmp, "k.toml", MITIGATIONS_OFF_ON_SERVER)
    env = dict(os.environ, NETTUNE_STATE_DIR=str(lab.state), COLUMNS="200")
    run = subprocess.Popen([sys.executable, "-m", "nettune.cli", "run", str(f), "--db", str(lab.tmp / "k.db"), "--doctor", "off"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    # returns the moment /etc/default/grub holds the edit: update-grub and the reboot come after it
    watch = subprocess.Popen(["ssh", "-i", lab.key, "-o", f"UserKnownHostsFile={lab.known}", "-o", "StrictHostKeyChecking=yes",
                              "-o", "BatchMode=yes", f"root@{lab.addr['server']}",
                              "while ! grep -q mitigations=off /etc/default/grub; do sleep 0.05; done"])
    try:
        while watch.poll() is None and run.poll() is None:
            time.sleep(0.05)
        edited = watch.poll() == 0
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)  # kill -9, the whole nettune process
        said = run.communicate()[0].decode(errors="replace")
        if watch.poll() is None:
            watch.kill()
        watch.wait()
    assert edited, f"the run ended before editing the boot configuration: {said[-2000:]}"
    # an update-grub the killed run started goes on in the guest: let it end, as it would before a user's restore
    lab.ssh("server", "while pgrep -x 'update-grub|grub-mkconfig' >/dev/null; do sleep 0.2; done", timeout=120)
    assert lab.ssh("server", "cat /etc/default/grub") != grub0  # the edit, and no restore: nettune died
    restored = nettune("restore", timeout=600, env={"NETTUNE_STATE_DIR": str(lab.state)})
    assert restored.returncode == 0, restored.stdout + restored.stderr
    lab.wait_ssh("server")  # had the reboot been sent before the kill, the restore rebooted it back
    assert _grub_files(lab) == (grub0, cfg0)
    assert lab.ssh("server", "cat /proc/cmdline") == cmdline0
    again = nettune("restore", timeout=120, env={"NETTUNE_STATE_DIR": str(lab.state)})
    assert "nothing" in (again.stdout + again.stderr).lower()


@long_vm
def test_kill_9_mid_restart_then_restore_brings_the_domain_back(lab):
    """kill -9 while libvirt_queues restarts a guest (shut off, not started yet): `nettune
    restore` over SSH to the hypervisor puts the definition back and starts the guest."""
    xml0 = lab.virsh("dumpxml", "--inactive", "client")
    f = _write(lab.tmp, "q.toml", """
[workload]
server = "server"
client = "client"
duration = 1
[knobs]
"libvirt_queues:client" = 2
[knobs.hosts]
"libvirt_queues:client" = ["hv"]
""")
    env = dict(os.environ, NETTUNE_STATE_DIR=str(lab.state), COLUMNS="200")
    run = subprocess.Popen([sys.executable, "-m", "nettune.cli", "run", str(f), "--db", str(lab.tmp / "q.db"), "--doctor", "off"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        while run.poll() is None and lab.hv.virsh("domstate", "client", check=False).stdout.strip() != "shut off":
            time.sleep(0.1)
        caught = run.poll() is None
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
        said = run.communicate()[0].decode(errors="replace")
    assert caught, f"the run ended before the guest was shut down: {said[-2000:]}"
    assert "queues='2'" in lab.virsh("dumpxml", "--inactive", "client")  # the new definition, and nettune gone
    restored = nettune("restore", timeout=600, env={"NETTUNE_STATE_DIR": str(lab.state)})
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert lab.virsh("domstate", "client").strip() == "running" and lab.virsh("dumpxml", "--inactive", "client") == xml0
    lab.wait_ssh("client")
    assert re.search(r"Combined:\s+1\s*$", lab.ssh("client", "ethtool -l eth0"), re.M)


def test_delay_on_the_guests_links_gives_the_configured_rtt(lab):
    from nettune.plan.points import expand_and_check
    from nettune.plan.study_file import load_study
    from nettune.targets import make_target

    def rtt(target) -> float:
        r = target.hosts["client"].run(["ping", "-c", "6", "-i", "0.2", lab.addr["server"]], timeout=60)
        m = re.search(r"min/avg/max(?:/mdev)? = ([\d.]+)/", r.stdout)
        assert m, r.stdout + r.stderr
        return float(m.group(1))

    f = _write(lab.tmp, "d.toml", '[workload]\nserver = "server"\nclient = "client"\n[target.link]\ndelay = "40ms"\n')
    study = load_study(f)
    target = make_target(study)
    try:
        plain = rtt(target)
        state = target.prepare(expand_and_check(study)[0])
        shaped = rtt(target)
        assert "netem" in state["shaping"]["server"] and "delay 20ms" in state["shaping"]["client"]
    finally:
        target.close()  # the guests' default qdisc back
    target = make_target(study)
    try:
        after = rtt(target)
    finally:
        target.close()
    assert plain < 20 and after < 20  # unshaped: the emulated guests' own latency
    assert 40.0 <= shaped <= 40.0 + plain + 15, (plain, shaped)  # netem's delay is a floor; TCG adds its own on top


def test_lab_status_lists_the_vm_lab(lab):
    out = nettune("lab", "status", check=True).stdout
    assert re.search(r"VM labs:.*\bnt-vmtest\b", out)
    assert shutil.which("virsh")
