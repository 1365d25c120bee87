"""cmdline:KEY over real SSH: nettune edits the boot configuration, reboots the host, waits
for its sshd, checks /proc/cmdline, runs the point, and puts everything back, also after
kill -9 (`nettune restore`). Lab hosts with a real sshd each (`nettune lab up --ssh`).

The reboot is the one thing faked, as thinly as it can be (FakeBoot): the host's sshd runs
in a mount namespace of its own where four paths are bind-mounted from a test directory:
  /etc/default                       a copy of this machine's, plus Debian's grub file
                                     (tests/fixtures/cmdline/real/debian, SOURCES.md)
  /usr/local/sbin                    `update-grub` (sources /etc/default/grub and grub.d/*.cfg
                                     like grub-mkconfig's 10_linux, writes the next boot's
                                     line) and `reboot` (asks the test to reboot the host)
  /proc/cmdline                      the line the host "booted" with
  /proc/sys/kernel/random/boot_id    a new UUID every "boot"
A reboot request makes the test do what a reboot does to an SSH client: the host's sshd
and every session of it go, the next boot's line becomes /proc/cmdline with a new boot id,
and sshd starts again (in a fresh mount namespace with the same view). Everything else,
nettune's edit, its SSH reconnect, the wait and the checks, is real. Only the other lab
host, with no fake, shows that a host with this machine's boot id is refused.
"""
from __future__ import annotations

import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from nettune import load_study
from nettune.run.study import run_study
from nettune.knobs.journal import Journal
from nettune.store.writer import StoreWriter
from nettune.targets.ssh import sshlab
from nettune.targets.procs import kill_pid

from conftest import needs_iperf3, needs_root, nettune
from sshlab_util import kill_9_once_changed, lab_fixture, private_state, restart_sshd_with_mounts  # noqa: F401 - private_state: autouse

pytestmark = [needs_root, needs_iperf3]

LAB, HOSTS, SUBNET = "h13-reboot", ["server", "client"], "198.19.233.0/24"
lab = lab_fixture(LAB, HOSTS, SUBNET)
GRUB = Path(__file__).parent / "fixtures" / "cmdline" / "real" / "debian" / "etc" / "default" / "grub"

UPDATE_GRUB = """#!/bin/sh
. /etc/default/grub
for f in /etc/default/grub.d/*.cfg; do [ -f "$f" ] && . "$f"; done
printf '%s\\n' "BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=3f1c ro $GRUB_CMDLINE_LINUX $GRUB_CMDLINE_LINUX_DEFAULT" > {d}/next-cmdline
echo "Generating grub configuration file ..." >&2
"""
REBOOT = "#!/bin/sh\ntouch {d}/reboot-requested\n"


class FakeBoot:
    """The lab host `host` as a machine that can reboot (see the module docstring)."""

    def __init__(self, layout, host: str, d: Path):
        self.layout, self.host, self.d = layout, host, d
        self.reboots = 0
        self.boots_generated_config = True  # False: the firmware boots another entry (the edit never reaches the kernel)
        self._stop = threading.Event()
        (d / "bin").mkdir(parents=True)
        shutil.copytree("/etc/default", d / "default", symlinks=True)
        shutil.copy(GRUB, d / "default" / "grub")
        for name, text in (("update-grub", UPDATE_GRUB), ("reboot", REBOOT)):
            (d / "bin" / name).write_text(text.format(d=d))
            (d / "bin" / name).chmod(0o755)
        subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", 'mount --bind "$1" /etc/default && exec "$2"', "sh",
                        str(d / "default"), str(d / "bin" / "update-grub")], check=True, capture_output=True)  # the boot it is in now
        (d / "cmdline").write_text((d / "next-cmdline").read_text())
        (d / "boot_id").write_text(str(uuid.uuid4()) + "\n")
        self.grub_before = (d / "default" / "grub").read_bytes()
        self.cmdline_before = (d / "cmdline").read_text()
        self._sshd()
        self._th = threading.Thread(target=self._loop, daemon=True)
        self._th.start()

    def _sshd(self) -> None:
        binds = [(self.d / "default", "/etc/default"), (self.d / "bin", "/usr/local/sbin"),
                 (self.d / "cmdline", "/proc/cmdline"), (self.d / "boot_id", "/proc/sys/kernel/random/boot_id")]
        setup = "import subprocess\n" + "".join(f"subprocess.run(['mount', '--bind', {str(s)!r}, {t!r}], check=True)\n" for s, t in binds)
        restart_sshd_with_mounts(self.layout, self.host, setup)

    def _loop(self) -> None:
        req = self.d / "reboot-requested"
        while not self._stop.is_set():
            if req.exists():
                req.unlink()
                sessions = sshlab.session_pids(LAB, self.host)
                sshlab.stop_sshd(LAB, self.host)
                for pid in sessions:  # every connection to the host drops
                    kill_pid(pid)
                if self.boots_generated_config:
                    (self.d / "cmdline").write_text((self.d / "next-cmdline").read_text())  # in place: the bind mount shows it
                (self.d / "boot_id").write_text(str(uuid.uuid4()) + "\n")
                time.sleep(1.0)  # down for a moment
                self._sshd()
                self.reboots += 1
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        self._th.join()
        sshlab.stop_sshd(LAB, self.host)
        sshlab.start_sshd(self.layout, self.host)  # the plain sshd back for the next test


@pytest.fixture
def fake_boot(lab, tmp_path):
    fb = FakeBoot(lab["layout"], "server", tmp_path / "boot")
    try:
        yield fb
    finally:
        fb.close()


def study(inv: Path, sweep: str, name: str = "h13-boot", extra: str = "") -> str:
    return f"""
name = "{name}"
[target]
kind = "ssh"
inventory = "{inv}"
reconnect_timeout = 20
[target.hosts.server]
allow_reboot = true
reboot_timeout = 60
{extra}
[workload]
server = "server"
client = "client"
duration = 1
[repeat]
runs = 2
[sweep]
{sweep}
[knobs]
"cmdline:mitigations" = "{{mit}}"
[knobs.hosts]
"cmdline:mitigations" = ["server"]
"""


def test_run_reboots_once_per_value_checks_proc_cmdline_and_restores(lab, fake_boot, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(study(lab["inventory"], 'mit = ["off", "auto"]\nstreams = [1, 2]'))
    s = load_study(f)
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(s, store, f.read_text(), str(f))
        runs = store.runs(out.study_id)
    assert out.status == "done", out
    assert len(runs) == 8 and all(r.ok for r in runs), [r.error for r in runs if not r.ok]
    # interleaved rounds would switch off/auto before every test (8 reboots + the restore);
    # grouped: off, then auto (the kernel's default: mitigations= absent, the original command
    # line); the restore puts both changes back in the configuration, newest first (the
    # journal's rule), and the host already runs the original: no third reboot
    assert fake_boot.reboots == 2
    assert [c["new"] for c in Journal().records() if c["op"] == "change"] == ["off", None]  # auto journaled as absent
    assert fake_boot.d.joinpath("default/grub").read_bytes() == fake_boot.grub_before  # byte for byte
    assert fake_boot.d.joinpath("cmdline").read_text() == fake_boot.cmdline_before
    assert not [c for s_ in Journal().open_sessions() for c in s_.changes]
    r = nettune("report", "h13-boot", "--db", str(tmp_path / "r.db"), "--out", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "**Security:** cmdline:mitigations=off turns off" in (tmp_path / "rep" / "report.md").read_text()


def test_kill_9_after_the_reboot_then_restore_reboots_back(lab, fake_boot, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(study(lab["inventory"], 'mit = ["off"]'))
    kill_9_once_changed(f, tmp_path / "r.db", 1, tmp_path / "run.out")
    assert "mitigations=off" in fake_boot.d.joinpath("cmdline").read_text()  # killed while in force
    assert b"quiet splash mitigations=off" in fake_boot.d.joinpath("default/grub").read_bytes()
    assert fake_boot.reboots == 1
    r = nettune("restore")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "restored" in r.stdout and "cmdline:mitigations" in r.stdout
    assert fake_boot.reboots == 2
    assert fake_boot.d.joinpath("default/grub").read_bytes() == fake_boot.grub_before
    assert fake_boot.d.joinpath("cmdline").read_text() == fake_boot.cmdline_before
    assert not [c for s_ in Journal().open_sessions() for c in s_.changes]


def two_keys(inv: Path) -> str:
    """One point that changes two command-line keys of the server: mitigations=off and nosmt."""
    return study(inv, 'mit = ["off"]').replace("[knobs.hosts]\n", '"cmdline:nosmt" = true\n[knobs.hosts]\n"cmdline:nosmt" = ["server"]\n')


def assert_all_back(fake_boot: FakeBoot) -> None:
    assert fake_boot.d.joinpath("default/grub").read_bytes() == fake_boot.grub_before  # byte for byte
    assert fake_boot.d.joinpath("cmdline").read_text() == fake_boot.cmdline_before
    assert not [c for s_ in Journal().open_sessions() for c in s_.changes]
    assert not Journal().open_sessions()  # the session ended


def test_two_keys_at_one_point_boot_once_and_the_end_of_the_run_reboots_once(lab, fake_boot, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(two_keys(lab["inventory"]))
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(load_study(f), store, f.read_text(), str(f))
        runs = store.runs(out.study_id)
    assert out.status == "done" and len(runs) == 2 and all(r.ok for r in runs), [r.error for r in runs if not r.ok]
    # both edits, then one reboot into them (checked: the tests ran); both back, then one reboot
    assert fake_boot.reboots == 2
    assert sorted(c["knob"] for c in Journal().records() if c["op"] == "change") == ["cmdline:mitigations", "cmdline:nosmt"]
    assert sorted(c["result"] for c in Journal().records() if c["op"] == "done") == ["restored", "restored"]
    assert_all_back(fake_boot)


def test_two_keys_kill_9_then_restore_reboots_once(lab, fake_boot, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(two_keys(lab["inventory"]))
    kill_9_once_changed(f, tmp_path / "r.db", 2, tmp_path / "run.out")
    assert "mitigations=off nosmt" in fake_boot.d.joinpath("cmdline").read_text()  # killed while both are in force
    assert fake_boot.reboots == 1  # one boot for both
    r = nettune("restore")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cmdline:mitigations" in r.stdout and "cmdline:nosmt" in r.stdout and r.stdout.count("restored") >= 2, r.stdout
    assert fake_boot.reboots == 2  # one reboot for both restores
    assert_all_back(fake_boot)


def test_a_value_the_kernel_did_not_get_fails_the_point_with_the_reason(lab, fake_boot, tmp_path):
    """The edit is made in the right file but the machine boots another entry (firmware boot
    order, another ESP): /proc/cmdline after the reboot is the judge, not the file written."""
    fake_boot.boots_generated_config = False
    f = tmp_path / "s.toml"
    f.write_text(study(lab["inventory"], 'mit = ["off", "auto,nosmt"]'))
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(load_study(f), store, f.read_text(), str(f))  # the study goes on: no exception
        runs = store.runs(out.study_id)
    # every test of both points failed with the reason, each point's value tried once (one reboot
    # each, not one per run), and nothing was measured under settings that were not in force
    assert len(runs) == 4 and not any(r.ok for r in runs)
    why = {r.point["mit"]: r.error for r in runs}
    assert "after the reboot /proc/cmdline has no mitigations, not mitigations=off" in why["off"]
    assert "not mitigations=auto,nosmt" in why["auto,nosmt"] and all("settings are not in force" in e for e in why.values())
    assert fake_boot.reboots == 2
    # the edit is put back all the same (the kernel never had it: no reboot needed for that)
    assert fake_boot.d.joinpath("default/grub").read_bytes() == fake_boot.grub_before
    assert not [c for s_ in Journal().open_sessions() for c in s_.changes]


def test_an_override_in_grub_d_gets_the_edit_and_the_kernel_gets_the_value(lab, fake_boot, tmp_path):
    """A cloud image's grub.d/50-cloudimg-settings.cfg sets GRUB_CMDLINE_LINUX_DEFAULT after
    /etc/default/grub: the edit goes where update-grub takes the value from, and is put back."""
    cloud = fake_boot.d / "default/grub.d/50-cloudimg-settings.cfg"
    cloud.parent.mkdir(exist_ok=True)
    cloud.write_text('GRUB_CMDLINE_LINUX_DEFAULT="console=tty1 console=ttyS0"\n')
    f = tmp_path / "s.toml"
    f.write_text(study(lab["inventory"], 'mit = ["off"]'))
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(load_study(f), store, f.read_text(), str(f))
        runs = store.runs(out.study_id)
    assert len(runs) == 2 and all(r.ok for r in runs), [r.error for r in runs]
    assert cloud.read_text() == 'GRUB_CMDLINE_LINUX_DEFAULT="console=tty1 console=ttyS0"\n'  # put back
    assert fake_boot.d.joinpath("default/grub").read_bytes() == fake_boot.grub_before
    assert "mitigations" not in fake_boot.d.joinpath("cmdline").read_text()


def test_a_host_with_this_machines_boot_id_is_refused_before_anything_changes(lab, tmp_path):
    """The client's sshd runs without the fake: it is this machine, whatever its address."""
    f = tmp_path / "s.toml"
    text = study(lab["inventory"], 'mit = ["off"]', extra="[target.hosts.client]\nallow_reboot = true\n").replace('["server"]', '["client"]')
    f.write_text(text)
    with StoreWriter(tmp_path / "r.db") as store:
        with pytest.raises(Exception, match="has this machine's boot id"):
            run_study(load_study(f), store, f.read_text(), str(f))
    assert not Journal().records() or not [c for s_ in Journal().open_sessions() for c in s_.changes]
