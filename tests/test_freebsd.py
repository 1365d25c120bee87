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

import pytest

from nettune.knobs.base import Ctx, KnobError, Loc
from nettune.knobs.registry import KINDS
from nettune.probes.machine_cpu import machine_percent
from nettune.probes.freebsd_cpu import cp_time_as_proc_stat, read_cp_time
from nettune.targets.base import CommandResult, Host
from nettune.targets.freebsd import freebsd_facts

from freebsd_fake import HOSTILE, IFCAP, FakeFreeBSD, no_shell


@pytest.fixture
def host() -> FakeFreeBSD:
    return FakeFreeBSD()


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
