"""OS-neutral knobs (issue 19): one name (mtu, offload:FEATURE, cc, sockbuf:max|default),
each host its own OS's form. FreeBSD through the fake host answering with real ifconfig
and sysctl outputs (tests/fixtures/freebsd/real, SOURCES.md): what the run sets there is
exactly what `nettune run --dry-run` prints for FreeBSD, the stored values name the real
sysctls, and everything is put back. Linux: the sysctl forms on a host of /proc/sys files."""
from __future__ import annotations

import json
import shlex

import pytest

from nettune import parse_study
from nettune.knobs.apply import KnobSession
from nettune.knobs.os_commands import knob_commands
from nettune.plan.points import expand_and_check
from nettune.targets.base import CommandResult, HostBase

from freebsd_fake import FakeFreeBSD, no_shell
from freebsd_fake import FIX

REAL = FIX / "real"
KNOBS = {"mtu": 9000, "offload:lro": "on", "offload:tso": "on", "cc": "newreno", "sockbuf:max": "8M", "sockbuf:default": "4M"}


class _OneHost:
    def __init__(self, host):
        self.hosts = {host.name: host}

    def scratch(self, queues: int):
        from contextlib import nullcontext

        return nullcontext(None)


def _study(knobs: dict, host: str = "fbsd1") -> tuple:
    """A study of these knobs on an ssh host named like the fake FreeBSD host, with its
    interface (the knobs run on the fakes, handed to the session as the target's hosts)."""
    body = "".join(f'"{k}" = {json.dumps(v)}\n' for k, v in knobs.items())  # TOML's strings, numbers and booleans are JSON's
    text = (f'name = "nt-neutral"\n[target]\nkind = "ssh"\n[target.hosts.{host}]\naddress = "192.0.2.10"\ninterface = "lagg0"\n'
            f'allow_link_reset = true\n[target.hosts.peer]\naddress = "192.0.2.11"\n[workload]\nduration = 1\nserver = "{host}"\nclient = "peer"\n'
            f'[knobs]\n{body}[knobs.hosts]\n' + "".join(f'"{k}" = ["{host}"]\n' for k in knobs))
    study = parse_study(text)
    (rp,) = expand_and_check(study, text, "n.toml")
    return study, rp


def _freebsd_host() -> FakeFreeBSD:
    host = FakeFreeBSD(REAL / "lagg0_failover_ifconfig_m.txt")
    for line in (REAL / "sysctl_net_inet_tcp_buffers.txt").read_text().splitlines():
        name, value = line.split(": ", 1)
        host.sysctl[name] = value
    return host


def test_freebsd_gets_what_the_dry_run_prints_and_everything_goes_back(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    host = _freebsd_host()
    before = dict(host.sysctl)
    study, rp = _study(KNOBS)
    s = KnobSession(study, _OneHost(host), None)
    values = s.apply_point(rp)
    changed = [c for c in host.calls if (c[0] == "sysctl" and "=" in c[-1]) or (c[0] == "ifconfig" and len(c) > 2 and c[1] != "-m")]
    printed = [shlex.split(c) for k, v in KNOBS.items() for c in knob_commands("freebsd", k, v, host.iface)]
    assert changed == printed
    assert ["sysctl", "kern.ipc.maxsockbuf=8388608"] in changed and ["sysctl", "net.inet.tcp.recvspace=4194304"] in changed
    assert ["ifconfig", "lagg0", "lro"] in changed and ["ifconfig", "lagg0", "mtu", "9000"] in changed
    # the stored values name the real sysctls each host got
    mine = values["fbsd1"]
    assert mine["sockbuf:max (sysctl:kern.ipc.maxsockbuf)"] == "8388608"
    assert mine["sockbuf:max (sysctl:net.inet.tcp.recvbuf_max)"] == "8388608"
    assert mine["sockbuf:default (sysctl:net.inet.tcp.sendspace)"] == "4194304"
    assert host.sysctl["net.inet.tcp.cc.algorithm"] == "newreno" and host.mtu == 9000
    assert s.restore_all() == []
    assert host.sysctl == before
    assert host.run(["ifconfig", "-m", "lagg0"]).stdout == host.capture
    no_shell(host.calls)


def test_a_linux_offload_with_no_freebsd_form_is_refused_before_any_change(tmp_path, monkeypatch):
    from nettune.errors import SpecError
    from nettune.knobs.precheck import precheck

    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    host = _freebsd_host()
    study, rp = _study({"offload:gro": "off"})
    with pytest.raises(SpecError) as e:
        precheck(study, _OneHost(host), [rp], "", "n.toml", gate=False)
    assert "offload:gro" in str(e.value) and "FreeBSD" in str(e.value)
    assert not [c for c in host.calls if c[0] == "ifconfig" and len(c) > 2 and c[1] != "-m"]
    assert knob_commands("freebsd", "offload:gro", "off", "vtnet0")[0].startswith("# offload:gro: no FreeBSD form")


class _LinuxHost(HostBase):
    """A whole Linux host whose /proc/sys is a dict (paths -> text), as the kernel prints them."""

    name, address, os = "deb1", "192.0.2.20", "linux"

    def __init__(self) -> None:
        self.files = {
            "/proc/sys/net/core/rmem_max": "212992\n", "/proc/sys/net/core/wmem_max": "212992\n",
            "/proc/sys/net/ipv4/tcp_rmem": "4096\t131072\t6291456\n", "/proc/sys/net/ipv4/tcp_wmem": "4096\t16384\t4194304\n",
        }
        self.writes: list[tuple[str, str]] = []

    def reach(self) -> dict:
        return {"address": self.address}

    def read_text(self, path: str) -> str:
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]

    def write_text(self, path: str, text: str) -> None:
        self.writes.append((path, text))
        self.files[path] = text + "\n"

    def run(self, argv, timeout=30.0):
        ok = argv[:2] == ["test", "-w"] and argv[2] in self.files
        return CommandResult(argv, 0 if ok else 1, "", "")


def test_linux_gets_the_linux_sysctls_keeping_min_and_default(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    host = _LinuxHost()
    before = dict(host.files)
    study, rp = _study({"sockbuf:max": "8M", "sockbuf:default": 1048576}, "deb1")
    s = KnobSession(study, _OneHost(host), None)
    values = s.apply_point(rp)["deb1"]
    assert host.files["/proc/sys/net/core/rmem_max"].split() == ["8388608"]
    assert host.files["/proc/sys/net/ipv4/tcp_rmem"].split() == ["4096", "1048576", "8388608"]  # min kept, default and max set
    assert host.files["/proc/sys/net/ipv4/tcp_wmem"].split() == ["4096", "1048576", "8388608"]
    assert values["sockbuf:max (sysctl:net.core.wmem_max)"] == "8388608"
    assert values["sockbuf:max (sysctl_field:net.ipv4.tcp_rmem:3)"] == "* * 8388608"  # field 3 set, the others kept
    assert s.restore_all() == []
    assert {k: v.split() for k, v in host.files.items()} == {k: v.split() for k, v in before.items()}
    lines = knob_commands("linux", "sockbuf:max", "8M")
    assert lines[:2] == ["sysctl -w net.core.rmem_max=8388608", "sysctl -w net.core.wmem_max=8388608"]
    assert "awk '{$3=8388608; print}'" in lines[2]


@pytest.mark.parametrize("raw,why", [("8X", "expected a size in bytes"), (100, "out of range"), (True, "expected a size")])
def test_bad_sockbuf_values_are_one_line_before_any_change(raw, why, tmp_path, monkeypatch):
    from nettune.errors import SpecError
    from nettune.knobs.precheck import precheck

    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    host = _freebsd_host()
    for knobs, words in (({"sockbuf:max": raw}, why), ({"sockbuf:min": "8M"}, "use sockbuf:max")):
        with pytest.raises(SpecError) as e:  # refused when the file is read, as the dry run refuses it
            study, rp = _study(knobs)
            precheck(study, _OneHost(host), [rp], "", "n.toml", gate=False)
        assert "knobs.sockbuf:" in str(e.value) and words in str(e.value) and "\n" not in str(e.value)
    assert host.calls == []


def test_dry_run_of_an_ssh_study_prints_both_forms_per_host():
    from nettune.commands.dry_run import dry_run

    text = """name = "nt-vms"
[target]
kind = "ssh"
[target.hosts.fbsd-a]
address = "192.0.2.10"
interface = "vmx0"
allow_link_reset = true
[target.hosts.fbsd-b]
address = "192.0.2.11"
interface = "vmx0"
allow_link_reset = true
[workload]
engine = "iperf2"
server = "fbsd-a"
client = "fbsd-b"
[knobs]
mtu = 9000
"offload:lro" = "on"
"sockbuf:max" = "8M"
cc = "htcp"
"""
    plan = dry_run(parse_study(text, "v.toml"), text, "v.toml")
    notes = plan.planned[0].notes
    fb = next(n for n in notes if n.startswith("knobs on fbsd-a (freebsd, if it is): "))
    lx = next(n for n in notes if n.startswith("knobs on fbsd-a (linux, if it is): "))
    assert "ifconfig vmx0 mtu 9000; ifconfig vmx0 lro; sysctl kern.ipc.maxsockbuf=8388608" in fb
    assert "sysctl net.inet.tcp.cc.algorithm=htcp" in fb
    assert "ip link set dev vmx0 mtu 9000; ethtool -K vmx0 lro on; sysctl -w net.core.rmem_max=8388608" in lx
    assert "sysctl -w net.ipv4.tcp_congestion_control=htcp" in lx


def test_persist_reads_the_stored_settings_of_a_neutral_knob(tmp_path):
    from nettune.knobs.persist import write_files

    settings = {"knobs": {"machine": {"sockbuf:max (sysctl:net.core.rmem_max)": "8388608"},
                          "h1": {"sockbuf:max (sysctl_field:net.ipv4.tcp_rmem:3)": "* * 8388608"}}}
    write_files("s", {"os": "debian"}, settings, tmp_path)
    assert "net.core.rmem_max = 8388608" in (tmp_path / "machine" / "99-nettune-s.conf").read_text()
    assert "awk '{$3=8388608; print}'" in (tmp_path / "h1" / "apply.sh").read_text()


def test_study_b_example_with_vms_prints_each_pairs_freebsd_and_linux_commands():
    """examples/study-b.toml with an ssh [target] instead of the lab (what its comment says to
    do with real VMs) and the lab stand-ins removed: each point's pair gets both forms."""
    import re

    from conftest import EXAMPLES
    from nettune.commands.dry_run import dry_run

    text = (EXAMPLES / "study-b.toml").read_text()
    hosts = "".join(f'[target.hosts.{h}]\naddress = "192.0.2.{10 + i}"\ninterface = "vmx0"\nallow_link_reset = true\n'
                    for i, h in enumerate(["freebsd-a", "freebsd-b", "debian-a", "debian-b"]))
    text = re.sub(r'\[target\]\nkind = "lab"\nhosts = \[[^\]]*\]\n', '[target]\nkind = "ssh"\n' + hosts, text)
    text = "\n".join(ln for ln in text.splitlines() if "lab stand-in only" not in ln) + "\n"
    plan = dry_run(parse_study(text, "b.toml"), text, "b.toml")
    for p in plan.planned:
        os_, mtu = p.label.split(", ")[0].split("=")[1], p.label.split(", ")[1].split("=")[1]
        notes = [n for n in p.notes if n.startswith("knobs on ")]
        assert {n.split(" (")[0] for n in notes} == {f"knobs on {os_}-a", f"knobs on {os_}-b"}  # only the point's pair
        fb = next(n for n in notes if n.startswith(f"knobs on {os_}-a (freebsd, if it is): "))
        lx = next(n for n in notes if n.startswith(f"knobs on {os_}-a (linux, if it is): "))
        assert f"ifconfig vmx0 mtu {mtu}" in fb and re.search(r"ifconfig vmx0 -?tso", fb)
        assert f"ip link set dev vmx0 mtu {mtu}" in lx and "ethtool -K vmx0 tso" in lx


def test_freebsd_cc_is_checked_against_the_loaded_algorithms_in_either_format(tmp_path, monkeypatch):
    """cc on FreeBSD: the value must be in net.inet.tcp.cc.available, read as FreeBSD 13+
    prints it (a table, fixture from a real host) or as older releases did (a comma list);
    one that is not loaded is refused before any change, naming the module to load."""
    from nettune.errors import SpecError
    from nettune.knobs.kinds.cc import freebsd_available
    from nettune.knobs.precheck import precheck

    table = (REAL / "sysctl_n_cc_available.txt").read_text()
    assert freebsd_available(table) == ["cubic", "htcp", "cdg", "chd", "dctcp", "vegas", "newreno"]
    assert freebsd_available("cubic, newreno\n") == ["cubic", "newreno"]

    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    host = _freebsd_host()
    host.sysctl["net.inet.tcp.cc.available"] = table
    study, rp = _study({"cc": "bbr"})
    with pytest.raises(SpecError) as e:
        precheck(study, _OneHost(host), [rp], "", "n.toml", gate=False)
    assert "bbr is not loaded" in str(e.value) and "kldload cc_bbr" in str(e.value) and "htcp" in str(e.value)
    assert not [c for c in host.calls if c[0] == "sysctl" and "=" in c[-1]]  # nothing changed

    study, rp = _study({"cc": "htcp"})  # loaded: set, and put back
    before = host.sysctl["net.inet.tcp.cc.algorithm"]
    s = KnobSession(study, _OneHost(host), None)
    s.apply_point(rp)
    assert host.sysctl["net.inet.tcp.cc.algorithm"] == "htcp"
    assert s.restore_all() == [] and host.sysctl["net.inet.tcp.cc.algorithm"] == before
