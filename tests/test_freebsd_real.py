"""FreeBSD offloads on real ifconfig outputs (tests/fixtures/freebsd/real, SOURCES.md):
apply then restore gives the captured output back byte for byte, a capability the
interface lacks is refused before the study starts, a value that does not read back fails
the point; remote command errors keep all of stderr."""
from __future__ import annotations

import pytest

from nettune.knobs.base import Ctx, KnobError, Loc
from nettune.knobs.registry import KINDS
from nettune.targets.base import CommandResult

from freebsd_fake import FIX, FakeFreeBSD, no_shell

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
    text = 'name = "nt-fbsd"\n[target]\nkind = "local"\n[workload]\nduration = 1\n[knobs]\n"offload:lro@lagg0" = "on"\n'  # local hosts have no default interface: the key names it
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
    text = 'name = "nt-fbsd"\n[target]\nkind = "local"\n[workload]\nduration = 1\n[knobs]\n"offload:lro@lagg0" = "on"\n'  # local hosts have no default interface: the key names it
    study = parse_study(text)
    (rp,) = expand_and_check(study, text, "s.toml")
    s = KnobSession(study, _OneHostTarget(host), None)
    with pytest.raises(NettuneError, match="offload:lro@lagg0 on fbsd1: set on but it reads back off"):
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


def test_remote_error_keeps_the_reason_before_the_last_stderr_line():
    host = FakeFreeBSD()
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
