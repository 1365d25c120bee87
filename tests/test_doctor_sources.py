"""Doctor's inputs: every check's "cannot tell" path, a sosreport's names, a tarball read
without trusting it, nettune's capture replaying a live run finding for finding, and
host-read names never becoming shell text (issue 33). Reads this machine; changes nothing."""
from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from nettune.doctor.archive import open_tree
from nettune.doctor.audit import audit, this_machine
from nettune.doctor.base import HostView
from nettune.doctor.capture import CaptureSource, write_capture
from nettune.doctor.inputs import views_from
from nettune.doctor.kernel_log import parse_events
from nettune.doctor.parsers import dmidecode, ethtool_settings, interrupts, ip_links, softnet
from nettune.doctor.registry import CHECKS, STUDY_CHECKS
from nettune.doctor.sosreport import mangle
from nettune.doctor.sources import LiveSource
from nettune.errors import NettuneError
from nettune.targets.local import LocalHost

REAL = Path(__file__).parent / "fixtures" / "doctor" / "real"
ALL = [c.id for c in CHECKS] + [c.id for c in STUDY_CHECKS]


def empty_view(os_: str = "linux") -> HostView:
    """A host of which nothing is known: a capture that holds no answer at all."""
    return HostView("blank", None, interface="eth0", source=CaptureSource({}, "capture blank", os_))


@pytest.mark.parametrize("check", ALL)
def test_every_check_says_cannot_tell_when_its_inputs_are_missing(check):
    views = [empty_view(), HostView("peer", None, interface="eth0", source=CaptureSource({}, "capture blank"))]
    rep = audit(views, {"blank": "198.18.0.1", "peer": "198.18.0.2"}, only={check})
    assert not rep.errors, rep.errors
    mine = [f for f in rep.findings if f.check == check]
    assert mine, f"{check} said nothing"
    # nothing is known, so nothing may be judged: no pass, no warning, no problem
    assert all(f.severity == "cannot_tell" for f in mine), [(f.severity, f.seen) for f in mine]
    for f in mine:
        assert f.seen.startswith("cannot tell") and f.evidence.startswith("missing: ") and f.fix, f
    assert rep.exit_code == 0  # "cannot tell" is no warning


def test_cannot_tell_names_the_missing_input_and_how_to_get_it():
    v = HostView("sos", None, interface="ens3", source=views_from(REAL / "hotsos-k8s-worker")[0][0].source)
    f = next(x for x in audit([v], only={"cpu.driver"}).findings)
    assert f.severity == "cannot_tell"
    assert "sys/devices/system/cpu/cpu0/cpufreq/scaling_driver: not in this sosreport" in f.evidence
    assert "nettune doctor --capture" in f.fix


def test_sos_command_names_follow_sos():
    # sos/report/plugins/__init__.py _mangle_command: non [\w-./] runs -> "_", "/" -> ".", /usr/bin/ dropped
    assert mangle(["ethtool", "-S", "eth0"]) == "ethtool_-S_eth0"
    assert mangle(["ip", "-s", "-d", "link"]) == "ip_-s_-d_link"
    assert mangle(["sysctl", "-a"]) == "sysctl_-a"
    assert mangle(["tuned-adm", "active"]) == "tuned-adm_active"
    assert mangle(["/usr/bin/journalctl", "-k", "--no-pager"]) == "journalctl_-k_--no-pager"
    assert mangle(["ls", "/sys/class/net"]) == "ls_.sys.class.net"
    # names that exist in the real sosreports of the corpus
    assert (REAL / "hotsos-k8s-worker" / "sos_commands" / "networking" / mangle(["ethtool", "-k", "flannel.1"])).is_file()


def test_real_formats_parse():
    text = (REAL / "hotsos-k8s-worker" / "sos_commands" / "networking" / "ip_-s_-d_link").read_text()
    links = ip_links(text)
    assert links["flannel.1"].kind == "vxlan" and links["flannel.1"].details["dev"] == "ens3" and links["flannel.1"].mtu == 8908
    assert links["flannel.1"].stats["tx_dropped"] == 13 and links["ens3"].state == "UP" and "LOWER_UP" in links["ens3"].flags
    cpus, lines, header = interrupts((REAL / "irqbalance-issue-122" / "proc" / "interrupts").read_text())
    assert not header and cpus == list(range(32)) and lines[1].names == ["eth0-TxRx-0"] and lines[1].counts[28] == 1852
    cpus, lines, header = interrupts((REAL / "node-exporter-fixtures" / "proc" / "interrupts").read_text())
    shared = next(x for x in lines if x.irq == "16")
    assert header and cpus == [0, 1, 2, 3] and shared.names == ["ehci_hcd:usb1", "mmc0"]
    rows, indexed = softnet((REAL / "node-exporter-fixtures" / "proc" / "net" / "softnet_stat").read_text())
    assert not indexed and [r.dropped for r in rows] == [0, 41, 0, 0] and rows[2].squeezed == 0x55
    s = ethtool_settings((REAL / "node-exporter-fixtures" / "sos_commands" / "networking" / "ethtool_eth0").read_text())
    assert (s.speed, s.duplex, s.link, max(s.supported), max(s.advertised)) == (1000, "full", True, 10000, 1000)
    dmi = dmidecode((REAL / "azure-hyperv-mail" / "sos_commands" / "hardware" / "dmidecode").read_text())
    assert dmi["chassis_asset_tag"] == "7783-7084-3265-9085-8269-3286-77" and dmi["sys_vendor"] == "Microsoft Corporation"
    # the same dmidecode as a mail quotes it
    assert dmidecode("> System Information\n>         Manufacturer: Microsoft Corporation\n")["sys_vendor"] == "Microsoft Corporation"


def test_kernel_log_events_of_each_format():
    ev = parse_events("[  91.153715] NETDEV WATCHDOG: eth0 (ftgmac100): transmit queue 0 timed out\n"
                      "[  5.1] bnxt_en 0000:04:00.0 eth0: TX timeout detected, starting reset task!\n"
                      "[ 17.98] mlx5_core 0000:41:00.0: poll_health:852:(pid 0): device's health compromised - reached miss count\n"
                      "[  1.0] ena 0000:00:05.0 eth0: Keep alive watchdog timeout.\n"
                      "[  2.0] eth1: Link is Down\n[  3.0] eth1: Link is Down\n[  4.0] eth1: Link is Down\n"
                      "[  5.0] tap0e778df8-ca: dropped over-mtu packet: 8950 > 1450\n")
    got = {(e.kind, e.driver, e.dev) for e in ev}
    assert got == {("timeout", "ftgmac100", "eth0"), ("timeout", "bnxt_en", "eth0"), ("health", "mlx5_core", None), ("health", "ena", "eth0"),
                   ("flap", "", "eth1"), ("overmtu", "", "tap0e778df8-ca")}


def _tar(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> None:
    with tarfile.open(path, "w:xz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)


def test_a_sosreport_tarball_is_read_without_trusting_it(tmp_path):
    t = tmp_path / "sosreport-h-2024.tar.xz"
    top = "sosreport-h-2024/"
    _tar(t, {top + "proc/interrupts": b"           CPU0\n 27:  5   PCI-MSI 1-edge  eth0-TxRx-0\n",
             top + "hostname": b"web1\n", "../escape": b"x", top + "sos_commands/kernel/sysctl_-a": b"net.core.somaxconn = 128\n",
             top + "etc/shadow": b"root:secret\n"},
         {top + "proc/net": "self/net", top + "proc/self": "4242", top + "sys/class/net/eth0": "/../../../etc/passwd",
          top + "sys/class/dmi": "../../../../etc"})
    tree = open_tree(t)
    assert tree.text("proc/interrupts").startswith("           CPU0")
    assert tree.text("escape") is None and tree.text("../escape") is None and "etc/shadow" not in tree.files
    assert tree.text("sys/class/net/eth0") is None and tree.text("sys/class/dmi/shadow") is None  # links never leave the tree
    views, _, kind = views_from(t)
    assert kind == "sosreport" and views[0].name == "web1"
    assert views[0].sysctl("net.core.somaxconn").text == "128"
    assert not list(tmp_path.glob("**/passwd"))  # nothing was extracted


def test_bad_inputs_are_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    for path, says in ((tmp_path / "nope", "no such file"), (tmp_path / "notes.txt", "neither a directory nor a tarball"), (tmp_path, "neither a nettune capture")):
        with pytest.raises(NettuneError, match=says):
            views_from(path)
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        data = b'{"format": "nettune doctor capture", "version": 99, "hosts": []}'
        info = tarfile.TarInfo("nettune-capture.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(NettuneError, match="capture version 99"):
        views_from(bad)


def _key(f) -> tuple:
    return (f.check, f.host, f.severity, f.seen, f.evidence, f.why, f.fix, f.revert, json.dumps(f.knob, sort_keys=True))


def test_this_machine_live_and_through_its_own_capture_find_the_same(tmp_path):
    views = this_machine(record=True)
    live = audit(views)
    out = tmp_path / "cap.tar.gz"
    write_capture(out, views, {})
    assert (os.stat(out).st_mode & 0o777) == 0o600
    again, addresses, kind = views_from(out)
    replay = audit(again, addresses)
    assert kind == "nettune capture" and replay.input == f"capture {out}"
    assert sorted(map(_key, replay.findings)) == sorted(map(_key, live.findings))
    assert all(f.inputs for f in replay.findings if f.severity != "cannot_tell")
    assert all(i.startswith("capture: ") for f in replay.findings for i in f.inputs)


def test_a_capture_lacking_an_answer_says_cannot_tell_not_absent(tmp_path):
    views = this_machine(record=True)
    audit(views, only={"net.somaxconn"})
    out = tmp_path / "cap.tar.gz"
    write_capture(out, views, {})
    again, _, _ = views_from(out)
    rep = audit(again, only={"net.somaxconn", "nic.hangs"})
    by = {f.check: f for f in rep.findings}
    assert by["net.somaxconn"].severity == "info"  # recorded
    assert by["nic.hangs"].severity == "cannot_tell" and "not in the capture" in by["nic.hangs"].evidence  # never read


def test_a_capture_holds_a_counters_second_read_and_a_sosreport_has_none():
    rec = {"read": {"/proc/net/softnet_stat": [{"text": "00000010 00000001 00000000"}, {"text": "00000020 00000005 00000000"}]}}
    v = HostView("c", None, interface="eth0", source=CaptureSource(rec, "capture x"))
    f = audit([v], only={"net.softnet"}).findings
    assert [(x.severity, x.seen) for x in f] == [("problem", "the per-CPU backlog is dropping packets now: +4 in the interval")]
    v = HostView("s", None, interface="eth0", source=views_from(REAL / "node-exporter-fixtures")[0][0].source)
    f = audit([v], only={"net.softnet"}).findings
    assert f[0].severity == "warn" and "one read" in f[0].seen


def test_names_read_from_a_host_never_become_shell_text(tmp_path):
    """Issue 33: doctor built `sh -c "grep ... {pattern}"` with the interface name and PCI
    paths it read from the host; a name carrying `$(...)` ran. Now the pattern is an
    argument of the shell, expanded as a glob only."""
    mark = tmp_path / "ran"
    src = LiveSource(LocalHost("x"))
    (tmp_path / "a").write_text("1\n")
    got = src.files(f"{tmp_path}/$(touch {mark})*")
    got2 = src.files(f"{tmp_path}/`touch {mark}`;touch {mark}")
    assert not mark.exists() and got.texts == {} and got2.texts == {}
    assert src.files(f"{tmp_path}/*").texts == {f"{tmp_path}/a": "1"}  # the glob itself still works
    v = HostView("x", LocalHost("x"), interface=f"e$(touch {mark})")
    audit([v], only={"nic.rps", "nic.irq", "pcie.link", "nic.numa", "net.tunnel", "nic.errors"})
    assert not mark.exists()


def test_a_tool_that_is_not_installed_is_cannot_tell_not_an_empty_answer():
    r = LiveSource(LocalHost("x")).run(["nettune-no-such-tool", "-k", "eth0"])
    assert not r.known and r.why == "nettune-no-such-tool is not installed" and "install" in r.how

    class NoEthtool(LocalHost):
        def run(self, argv, timeout=30.0):
            return super().run(["nettune-no-such-tool", *argv[1:]] if argv[0] == "ethtool" else argv, timeout)

    v = HostView("x", NoEthtool("x"), interface="lo")
    (f,) = audit([v], only={"nic.offloads"}).findings
    assert f.severity == "cannot_tell" and "ethtool is not installed" in f.evidence and f.fix.startswith("install ethtool")
