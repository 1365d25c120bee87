"""FreeBSD guests: facts, machine CPU from kern.cp_time, and the FreeBSD branches of the
sysctl, cc, mtu and offload knobs, driven through a fake FreeBSD host.

The fake answers from tests/fixtures/freebsd (outputs of uname(1), sysctl(8) and
ifconfig(8) in their FreeBSD 14 formats, written from the man pages and ifconfig.c, not
captured from a live guest) and keeps state: `sysctl NAME=VALUE` changes later reads,
`ifconfig IF mtu N` / `[-]lro` / `[-]tso` change later ifconfig output (options bitmask
included). Every argv is recorded, so tests check exactly what would run on the guest.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from nettune.knobs.base import Ctx, KnobError, Loc
from nettune.knobs.registry import KINDS
from nettune.probes.machine_cpu import machine_percent
from nettune.probes.freebsd_cpu import cp_time_as_proc_stat, read_cp_time
from nettune.targets.base import CommandResult, Host, HostBase
from nettune.targets.freebsd import freebsd_facts

FIX = Path(__file__).parent / "fixtures" / "freebsd"
HOSTILE = "1; touch /tmp/x"

# IFCAP_* bits (sys/net/if.h, FreeBSD 14) by the names ifconfig prints
IFCAP = {
    "RXCSUM": 0x1, "TXCSUM": 0x2, "NETCONS": 0x4, "VLAN_MTU": 0x8, "VLAN_HWTAGGING": 0x10, "JUMBO_MTU": 0x20,
    "POLLING": 0x40, "VLAN_HWCSUM": 0x80, "TSO4": 0x100, "TSO6": 0x200, "LRO": 0x400, "WOL_UCAST": 0x800,
    "WOL_MCAST": 0x1000, "WOL_MAGIC": 0x2000, "TOE4": 0x4000, "TOE6": 0x8000, "VLAN_HWFILTER": 0x10000,
    "NV": 0x20000, "VLAN_HWTSO": 0x40000, "LINKSTATE": 0x80000, "NETMAP": 0x100000, "RXCSUM_IPV6": 0x200000,
    "TXCSUM_IPV6": 0x400000, "HWSTATS": 0x800000, "TXRTLMT": 0x1000000, "HWRXTSTMP": 0x2000000,
    "MEXTPG": 0x4000000, "TXTLS4": 0x8000000, "TXTLS6": 0x10000000, "VXLAN_HWCSUM": 0x20000000,
    "VXLAN_HWTSO": 0x40000000, "TXTLS_RTLMT": 0x80000000,
}
# ifconfig(8) flag -> capabilities it toggles ("tso" is TSO4|TSO6; sbin/ifconfig/ifconfig.c)
IFCONFIG_CAPS = {
    "lro": ["LRO"], "tso": ["TSO4", "TSO6"], "tso4": ["TSO4"], "tso6": ["TSO6"], "rxcsum": ["RXCSUM"],
    "txcsum": ["TXCSUM"], "rxcsum6": ["RXCSUM_IPV6"], "txcsum6": ["TXCSUM_IPV6"], "vlanhwtag": ["VLAN_HWTAGGING"],
    "vlanhwcsum": ["VLAN_HWCSUM"], "vlanhwtso": ["VLAN_HWTSO"], "vlanhwfilter": ["VLAN_HWFILTER"],
}
_OPTS = re.compile(r"^(\s*)options=([0-9a-f]+)<([^>]*)>\n", re.M)
_CAPS = re.compile(r"^\s*capabilities=([0-9a-f]+)<([^>]*)>\n", re.M)
READ_ONLY = ("hw.", "kern.cp_time", "kern.cp_times")


class FakeFreeBSD(HostBase):
    """A FreeBSD 14.2 guest reached over SSH, as far as nettune's FreeBSD paths go."""

    name = "fbsd1"
    address = "192.0.2.10"
    os = "freebsd"

    def __init__(self, capture: Path = FIX / "ifconfig_vtnet0.txt") -> None:
        self.calls: list[list[str]] = []
        self.sysctl: dict[str, str] = {}
        for ln in (FIX / "sysctl_values.txt").read_text().splitlines():
            if ln.strip() and not ln.startswith("#"):
                k, v = ln.split(" = ", 1)
                self.sysctl[k] = v
        self.cp_times = [(FIX / f"cp_time_{i}.txt").read_text() for i in (1, 2)]
        self.capture = capture.read_text()
        self._ifconfig = self.capture
        self.iface = self._ifconfig.split(":", 1)[0]
        self.interface = self.iface
        self.mtu = int(re.search(r" mtu (\d+)", self._ifconfig).group(1))
        m = _OPTS.search(self._ifconfig)
        self.caps = m.group(3).split(",") if m and m.group(3) else []
        # bits the capture's ifconfig printed no name for (older ifconfig, newer kernel)
        self.unnamed = (int(m.group(2), 16) - sum(IFCAP[c] for c in self.caps)) if m else 0
        c = _CAPS.search(self._ifconfig)
        # a capture without capabilities= (plain ifconfig, or written from the man page):
        # the interface is taken to support what it has enabled
        self.supported = set(c.group(2).split(",")) if c else set(self.caps)
        self.stuck: set[str] = set()  # capabilities the driver accepts and keeps as they are

    def reach(self) -> dict:
        return {"address": self.address}

    # -- Host protocol ---------------------------------------------------------------
    def spawn(self, argv: list[str]):  # not needed by these paths
        raise NotImplementedError

    def read_text(self, path: str) -> str:
        raise FileNotFoundError(f"{path}: no such file on FreeBSD (no /proc, no /sys)")

    def write_text(self, path: str, text: str) -> None:
        raise OSError(f"{path}: not writable")

    def which(self, tool: str) -> str | None:
        return {"sysctl": "/sbin/sysctl", "ifconfig": "/sbin/ifconfig", "iperf3": "/usr/local/bin/iperf3"}.get(tool)

    def listening(self, port: int, proto: str = "tcp") -> bool:
        return False

    def run(self, argv: list[str], timeout: float = 30.0) -> CommandResult:
        argv = list(argv)
        assert all(isinstance(a, str) for a in argv), argv
        self.calls.append(argv)

        def res(out: str = "", err: str = "", rc: int = 0) -> CommandResult:
            return CommandResult(argv, rc, out, err)

        if argv == ["uname", "-srm"]:
            return res((FIX / "uname_srm.txt").read_text())
        if argv == ["uname", "-s"]:
            return res("FreeBSD\n")
        if argv == ["iperf3", "--version"]:
            return res((FIX / "iperf3_version.txt").read_text())
        if argv == ["iperf", "-v"]:
            return res("", "sh: iperf: not found\n", 127)
        if argv[0] == "sysctl":
            return self._sysctl(argv, res)
        if argv[0] == "ifconfig":
            return self._ifconfig_cmd(argv, res)
        return res("", f"sh: {argv[0]}: not found\n", 127)

    # -- sysctl(8) -------------------------------------------------------------------
    def _sysctl(self, argv, res):
        if argv[1:2] == ["-n"]:
            names = argv[2:]
            if names == ["hw.model", "hw.ncpu", "hw.physmem"]:
                return res((FIX / "sysctl_hw_model_ncpu_physmem.txt").read_text())
            if names[:1] == ["kern.cp_time"]:
                text = self.cp_times[0] if len(self.cp_times) == 1 else self.cp_times.pop(0)
                lines = text.splitlines()
                return res("\n".join(lines[: len(names)]) + "\n")
            out, err = [], []
            for n in names:
                if n in self.sysctl:
                    out.append(self.sysctl[n])
                else:
                    err.append(f"sysctl: unknown oid '{n}'")
            return res("".join(x + "\n" for x in out), "".join(x + "\n" for x in err), 1 if err else 0)
        if len(argv) == 2 and "=" in argv[1]:
            name, value = argv[1].split("=", 1)
            if name not in self.sysctl:
                return res("", f"sysctl: unknown oid '{name}'\n", 1)
            if name.startswith(READ_ONLY):
                return res("", f"sysctl: oid '{name}' is read only\n", 1)
            old = self.sysctl[name]
            if old.isdigit() and not value.isdigit():
                return res("", f"sysctl: invalid integer '{value}'\n", 1)
            if name == "net.inet.tcp.cc.algorithm" and value not in self.sysctl["net.inet.tcp.cc.available"].split(", "):
                return res(f"{name}: {old}\n", f"sysctl: {name}={value}: No such file or directory\n", 1)
            self.sysctl[name] = value
            return res(f"{name}: {old} -> {value}\n")
        return res("", "usage: sysctl [-bdehiNnoqTtWx] [ -B <bufsize> ] [-f filename] name[=value] ...\n", 1)

    # -- ifconfig(8) -----------------------------------------------------------------
    def _render(self, with_caps: bool) -> str:
        """The capture as ifconfig would print it now: options= from the current bits (the
        line is omitted when none is set), capabilities= only with -m."""
        text = re.sub(r" mtu \d+", f" mtu {self.mtu}", self._ifconfig, count=1)
        bits = self.unnamed + sum(IFCAP[c] for c in self.caps)

        def opts(m: re.Match) -> str:
            return f"{m.group(1)}options={bits:x}<{','.join(self.caps)}>\n" if bits else ""

        if with_caps and not _CAPS.search(text):  # the capture has none: print the supported set
            sup = sorted(self.supported, key=lambda c: IFCAP[c])
            line = f"\tcapabilities={sum(IFCAP[c] for c in sup):x}<{','.join(sup)}>\n"
            first = text.index("\n") + 1
            m = _OPTS.search(text)
            at = m.end() if m else first
            text = text[:at] + line + text[at:]
        text = _OPTS.sub(opts, text, count=1)
        return text if with_caps else _CAPS.sub("", text, count=1)

    def _ifconfig_cmd(self, argv, res):
        args = argv[1:]
        with_caps = args[:1] == ["-m"]
        args = args[1:] if with_caps else args
        if not args or args[0] != self.iface:
            return res("", f"ifconfig: interface {args[0] if args else ''} does not exist\n", 1)
        rest = args[1:]
        if not rest:
            return res(self._render(with_caps))
        if len(rest) == 2 and rest[0] == "mtu":
            if not rest[1].isdigit() or not 72 <= int(rest[1]) <= 65536:
                return res("", "ifconfig: ioctl SIOCSIFMTU (set mtu): Invalid argument\n", 1)
            self.mtu = int(rest[1])
            return res()
        if len(rest) == 1 and rest[0].lstrip("-") in IFCONFIG_CAPS:
            caps = IFCONFIG_CAPS[rest[0].lstrip("-")]
            caps = [c for c in caps if c not in self.stuck]
            if rest[0].startswith("-"):
                self.caps = [c for c in self.caps if c not in caps]
            else:  # like ifconfig's setifcap: masked by what the interface supports, exit 0 either way
                self.caps = sorted(set(self.caps) | (set(caps) & self.supported), key=lambda c: IFCAP[c])
            return res()
        return res("", f"ifconfig: {rest[0]}: bad value\n", 1)


@pytest.fixture
def host() -> FakeFreeBSD:
    return FakeFreeBSD()


def no_shell(calls: list[list[str]]) -> None:
    for argv in calls:
        assert argv[0] not in ("sh", "bash", "csh", "tcsh") and "-c" not in argv, argv


def test_fake_is_a_host(host):
    assert isinstance(host, Host)


# -- facts and CPU ---------------------------------------------------------------------

def test_facts(host):
    f = freebsd_facts(host)
    assert f["os"] == "freebsd"
    assert f["kernel"] == "FreeBSD 14.2-RELEASE amd64"
    assert f["cpu_model"] == "Intel(R) Xeon(R) Gold 6230R CPU @ 2.10GHz"
    assert f["cpu_count"] == 4
    assert f["mem_gib"] == 8.0
    assert f["iperf3_version"] == "3.17.1"
    assert f["iperf2_version"] is None  # not installed: rc 127
    assert f["tcp_congestion_control"] == "cubic" and f["maxsockbuf"] == "2097152"
    assert ["uname", "-srm"] in host.calls
    no_shell(host.calls)


def test_cpu_percent_from_two_cp_time_readings(host):
    # the FreeBSD machine-CPU probe's reading, with the fake as the host
    a = read_cp_time(host, 0.0)
    b = read_cp_time(host, 1.0)
    assert host.calls == [["sysctl", "-n", "kern.cp_time", "kern.cp_times"]] * 2
    assert a.ncpu == b.ncpu == 4
    busy, soft = machine_percent(a, b)
    # deltas: user 300, nice 0, sys 200, intr 50, idle 400 -> 550 busy of 950
    assert busy == pytest.approx(100 * 550 / 950)
    assert soft == 0.0  # FreeBSD has no softirq counter; intr goes to irq


def test_cp_time_mapping():
    text = cp_time_as_proc_stat("2110 0 1560 41 131231", "")
    assert text == "cpu 2110 0 1560 131231 0 41 0 0\n"
    with pytest.raises(OSError):
        cp_time_as_proc_stat("1 2 3")


def test_machine_cpu_probe_is_chosen_by_os(host):
    # the host declares os = "freebsd": its machine CPU comes from the kern.cp_time probe
    from nettune.engines.result import TestResult
    from nettune.probes.freebsd_cpu import CpTimeCpu
    from nettune.probes.registry import machine_cpu

    hyper = machine_cpu(host, "hypervisor:fbsd1")
    assert isinstance(hyper, CpTimeCpu)
    probe = machine_cpu(host)
    res = TestResult(engine="iperf3")
    probe.start()
    probe.stop()
    probe.write(res)
    assert res.cpu_host == pytest.approx(100 * 550 / 950) and res.cpu_host_softirq == 0.0
    hyper.start()  # fixtures used up: the same reading twice is 0 % busy
    hyper.stop()
    hyper.write(res)
    assert res.cpu_extra == {"hypervisor:fbsd1": 0.0}


def test_cp_time_failure_is_oserror(host):
    host.run = lambda argv, timeout=30.0: CommandResult(argv, 1, "", "sysctl: unknown oid 'kern.cp_times'")
    with pytest.raises(OSError, match="kern.cp_time"):
        read_cp_time(host)


# -- sysctl knobs ----------------------------------------------------------------------

@pytest.mark.parametrize("name,orig,new", [
    ("kern.ipc.maxsockbuf", "2097152", "8388608"),
    ("net.inet.tcp.sendspace", "32768", "65536"),
    ("net.inet.tcp.recvspace", "65536", "131072"),
])
def test_sysctl_round_trip(host, name, orig, new):
    k = KINDS["sysctl"]
    loc = Loc(f"sysctl:{name}", "sysctl", name)
    value = k.parse(loc, int(new))
    k.validate(host, loc, value, Ctx())
    original = k.read(host, loc)
    assert original == orig
    host.calls.clear()
    k.apply(host, loc, value)
    assert host.calls == [["sysctl", f"{name}={new}"]]
    assert k.read(host, loc) == new
    host.calls.clear()
    k.restore(host, loc, original)
    assert host.calls == [["sysctl", f"{name}={orig}"]]
    assert k.read(host, loc) == orig
    no_shell(host.calls)


def test_sysctl_hostile_value(host):
    k = KINDS["sysctl"]
    loc = Loc("sysctl:kern.ipc.maxsockbuf", "sysctl", "kern.ipc.maxsockbuf")
    value = k.parse(loc, HOSTILE)
    with pytest.raises(KnobError, match="whole number"):
        k.validate(host, loc, value, Ctx())
    # even if it got past validation, it is one argv element and sysctl(8) rejects it
    host.calls.clear()
    with pytest.raises(KnobError, match="invalid integer"):
        k.apply(host, loc, value)
    assert host.calls == [["sysctl", f"kern.ipc.maxsockbuf={HOSTILE}"]]
    assert host.sysctl["kern.ipc.maxsockbuf"] == "2097152"


def test_sysctl_hostile_name_refused():
    k = KINDS["sysctl"]
    for name in ("kern.ipc.maxsockbuf; reboot", "a b", "$(reboot)"):
        with pytest.raises(KnobError):
            k.parse(Loc(f"sysctl:{name}", "sysctl", name), "1")


def test_sysctl_unknown_and_read_only(host):
    k = KINDS["sysctl"]
    with pytest.raises(KnobError, match="unknown oid"):
        k.read(host, Loc("sysctl:net.inet.tcp.nope", "sysctl", "net.inet.tcp.nope"))
    with pytest.raises(KnobError, match="read only"):
        k.apply(host, Loc("sysctl:hw.ncpu", "sysctl", "hw.ncpu"), "8")


# -- cc ----------------------------------------------------------------------------------

def test_cc_round_trip(host):
    k = KINDS["cc"]
    loc = Loc("cc", "cc")
    value = k.parse(loc, "newreno")
    k.validate(host, loc, value, Ctx())
    original = k.read(host, loc)
    assert original == "cubic"
    host.calls.clear()
    k.apply(host, loc, value)
    assert host.calls == [["sysctl", "net.inet.tcp.cc.algorithm=newreno"]]
    assert k.read(host, loc) == "newreno"
    k.restore(host, loc, original)
    assert host.sysctl["net.inet.tcp.cc.algorithm"] == "cubic"
    with pytest.raises(KnobError, match="No such file"):  # not loaded (kldload cc_bbr)
        k.apply(host, loc, "bbr")
    with pytest.raises(KnobError):
        k.parse(loc, HOSTILE)
    no_shell(host.calls)


# -- mtu -------------------------------------------------------------------------------

def test_mtu_round_trip(host):
    k = KINDS["mtu"]
    loc = Loc("mtu", "mtu", None, "vtnet0")
    value = k.parse(loc, 9000)
    k.validate(host, loc, value, Ctx())
    original = k.read(host, loc)
    assert original == 1500
    host.calls.clear()
    k.apply(host, loc, value)
    assert host.calls == [["ifconfig", "vtnet0", "mtu", "9000"]]
    assert " mtu 9000" in host.run(["ifconfig", "vtnet0"]).stdout
    assert k.read(host, loc) == 9000
    host.calls.clear()
    k.restore(host, loc, original)
    assert host.calls == [["ifconfig", "vtnet0", "mtu", "1500"]]
    assert k.read(host, loc) == 1500
    no_shell(host.calls)


def test_mtu_hostile_and_missing_device(host):
    k = KINDS["mtu"]
    with pytest.raises(KnobError, match="whole number"):
        k.parse(Loc("mtu", "mtu", None, "vtnet0"), HOSTILE)
    with pytest.raises(KnobError, match="no interface vtnet9"):
        k.validate(host, Loc("mtu@vtnet9", "mtu", None, "vtnet9"), 9000, Ctx())
    # a hostile device name stays one argv element (ifconfig reports no such interface)
    dev = "vtnet0; touch /tmp/x"
    host.calls.clear()
    with pytest.raises(KnobError, match="does not exist"):
        k.apply(host, Loc(f"mtu@{dev}", "mtu", None, dev), 9000)
    assert host.calls == [["ifconfig", dev, "mtu", "9000"]]


# -- offload ---------------------------------------------------------------------------

@pytest.mark.parametrize("feature,flag,caps", [("lro", "lro", ["LRO"]), ("tso", "tso", ["TSO4", "TSO6"])])
def test_offload_round_trip(host, feature, flag, caps):
    k = KINDS["offload"]
    loc = Loc(f"offload:{feature}", "offload", feature, "vtnet0")
    value = k.parse(loc, "off")
    k.validate(host, loc, value, Ctx())
    original = k.read(host, loc)
    assert original == "on"
    host.calls.clear()
    k.apply(host, loc, value)
    assert host.calls == [["ifconfig", "vtnet0", f"-{flag}"]]
    out = host.run(["ifconfig", "vtnet0"]).stdout
    opts = re.search(r"options=([0-9a-f]+)<([^>]*)>", out)
    assert not set(caps) & set(opts.group(2).split(","))
    assert int(opts.group(1), 16) == 0x4C079B - sum(IFCAP[c] for c in caps)
    assert k.read(host, loc) == "off"
    host.calls.clear()
    k.restore(host, loc, original)
    assert host.calls == [["ifconfig", "vtnet0", flag]]
    assert k.read(host, loc) == "on"
    assert "options=4c079b<" in host.run(["ifconfig", "vtnet0"]).stdout
    no_shell(host.calls)


def test_offload_all_off_does_not_read_nd6_options(host):
    k = KINDS["offload"]
    host.caps = []  # ifconfig then prints no options= line, only "nd6 options=29<...>"
    for f in ("lro", "tso", "rx", "tx"):
        assert k.read(host, Loc(f"offload:{f}", "offload", f, "vtnet0")) == "off"


def test_offload_refusals(host):
    k = KINDS["offload"]
    with pytest.raises(KnobError, match="on or off"):
        k.parse(Loc("offload:lro", "offload", "lro", "vtnet0"), HOSTILE)
    with pytest.raises(KnobError, match="not an offload feature"):
        k.parse(Loc("offload:lro;reboot", "offload", "lro;reboot", "vtnet0"), "off")
    with pytest.raises(KnobError, match="only lro, tso, rx, tx"):
        k.validate(host, Loc("offload:gro", "offload", "gro", "vtnet0"), "off", Ctx())
    assert not any(c[:2] == ["ifconfig", "vtnet0"] and len(c) > 2 for c in host.calls)


# -- real ifconfig captures (fixtures/freebsd/real, SOURCES.md) -------------------------

REAL = FIX / "real"


def _offload(host: FakeFreeBSD, feature: str) -> Loc:
    return Loc(f"offload:{feature}", "offload", feature, host.iface)


@pytest.mark.parametrize("capture,feature,plain", [
    ("lagg0_failover_ifconfig_m.txt", "lro", False),   # capability without the option: on, then off again
    ("lagg0_failover_ifconfig_m.txt", "tso", False),
    ("lagg0_failover_ifconfig_m.txt", "rx", False),
    ("lagg0_failover_ifconfig_m.txt", "vlanhwtso", False),  # enabled: off, then on again
    ("aq1_ifconfig.txt", "tso", True),
    ("aq1_ifconfig.txt", "tx", True),
    ("igb0_ifconfig_v.txt", "tso", True),
    ("igb0_ifconfig_v.txt", "vlanhwtag", True),
])
def test_real_capture_apply_restore_is_byte_exact(capture, feature, plain):
    host = FakeFreeBSD(REAL / capture)
    k, loc = KINDS["offload"], _offload(host, feature)
    original = k.read(host, loc)
    new = "off" if original == "on" else "on"
    k.validate(host, loc, new, Ctx())
    k.apply(host, loc, new)
    assert k.read(host, loc) == new
    changed = host.run(["ifconfig", "-m", host.iface]).stdout
    assert changed != host.capture
    k.restore(host, loc, original)
    assert k.read(host, loc) == original
    # the interface's state as ifconfig prints it is the captured one again, byte for byte
    assert host.run(["ifconfig", host.iface] if plain else ["ifconfig", "-m", host.iface]).stdout == host.capture
    no_shell(host.calls)


def test_capability_the_interface_lacks_is_refused_before_any_change():
    host = FakeFreeBSD(REAL / "lagg0_loadbalance_ifconfig_m.txt")  # capabilities=10000<VLAN_HWFILTER>
    for feature in ("lro", "tso", "rx", "tx"):
        with pytest.raises(KnobError) as e:
            KINDS["offload"].validate(host, _offload(host, feature), "on", Ctx())
        msg = str(e.value)
        assert msg.startswith(f"offload:{feature}: interface lagg0 has no ") and "capabilities <VLAN_HWFILTER>" in msg
        assert "remove the knob for this host" in msg and "\n" not in msg
    assert all(c in (["ifconfig", "lagg0"], ["ifconfig", "-m", "lagg0"]) for c in host.calls)  # reads only


def test_precheck_refuses_a_missing_capability_naming_host_interface_and_knob(tmp_path, monkeypatch):
    from nettune import parse_study
    from nettune.errors import SpecError
    from nettune.knobs.precheck import precheck
    from nettune.plan.points import expand_and_check

    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    host = FakeFreeBSD(REAL / "lagg0_loadbalance_ifconfig_m.txt")
    text = 'name = "nt-fbsd"\n[target]\nkind = "local"\n[workload]\nduration = 1\n[knobs]\n"offload:lro" = "on"\n'
    study = parse_study(text)
    resolved = expand_and_check(study, text, "s.toml")
    target = _OneHostTarget(host)
    with pytest.raises(SpecError) as e:
        precheck(study, target, resolved, text, "s.toml", gate=False)
    msg = str(e.value)
    assert "s.toml" in msg and "offload:lro" in msg and "lagg0" in msg and "(host fbsd1)" in msg
    assert not [c for c in host.calls if len(c) > 2 and c[1] != "-m"]  # nothing changed


def test_a_value_that_does_not_read_back_fails_the_point(tmp_path, monkeypatch):
    """ifconfig accepts `lro` and exits 0 but the driver keeps it off: the point fails
    (no measurement under a setting that is not there) and nothing is left to restore."""
    from nettune import parse_study
    from nettune.errors import NettuneError
    from nettune.knobs.apply import KnobSession
    from nettune.knobs.journal import Journal
    from nettune.plan.points import expand_and_check

    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    host = FakeFreeBSD(REAL / "lagg0_failover_ifconfig_m.txt")
    host.stuck = {"LRO"}
    text = 'name = "nt-fbsd"\n[target]\nkind = "local"\n[workload]\nduration = 1\n[knobs]\n"offload:lro" = "on"\n'
    study = parse_study(text)
    (rp,) = expand_and_check(study, text, "s.toml")
    s = KnobSession(study, _OneHostTarget(host), None)
    with pytest.raises(NettuneError, match="offload:lro on fbsd1: set on but it reads back off"):
        s.apply_point(rp)
    assert ["ifconfig", "lagg0", "lro"] in host.calls
    assert s.active == [] and s.restore_all() == []
    done = [r for r in Journal().records() if r["op"] == "done"]
    assert [r["result"] for r in done] == ["not-applied"]
    assert host.run(["ifconfig", "-m", "lagg0"]).stdout == host.capture


class _OneHostTarget:
    """The part of a Target a knob session and precheck use: one remote host."""

    def __init__(self, host: FakeFreeBSD):
        self.hosts = {host.name: host}

    def scratch(self, queues: int):
        from contextlib import nullcontext

        return nullcontext(None)


def test_remote_error_keeps_the_reason_before_the_last_stderr_line(host):
    # FreeBSD sysctl(8) on a loader tunable: the reason, then a hint (sbin/sysctl/sysctl.c)
    host.sysctl["net.inet.tcp.tcbhashsize"] = "65536"
    real_run = host.run

    def run(argv, timeout=30.0):
        if argv == ["sysctl", "net.inet.tcp.tcbhashsize=1024"]:
            return CommandResult(argv, 1, "", "sysctl: oid 'net.inet.tcp.tcbhashsize' is a read only tunable\n"
                                              "sysctl: Tunable values are set in /boot/loader.conf\n")
        return real_run(argv, timeout)

    host.run = run
    loc = Loc("sysctl:net.inet.tcp.tcbhashsize", "sysctl", "net.inet.tcp.tcbhashsize")
    with pytest.raises(KnobError) as e:
        KINDS["sysctl"].apply(host, loc, "1024")
    msg = str(e.value)
    assert "is a read only tunable | sysctl: Tunable values are set in /boot/loader.conf" in msg and "\n" not in msg


def test_said_is_bounded():
    long = "".join(f"line {i}\n" for i in range(500))
    said = CommandResult(["x"], 1, "", long).said()
    assert said.startswith("line 480 | ") and said.endswith("line 499") and "\n" not in said
    wide = CommandResult(["x"], 1, "", "y" * 5000).said()
    assert len(wide) == 2003 and wide.startswith("...")
