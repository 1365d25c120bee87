"""Every kind of knob on the real lab: read, apply, restore, and restore-only-if-unchanged.

Each test runs a KnobSession (so the journal is exercised too) against a lab whose
namespaces and veths are real; host-wide values are set on this machine and restored.
Kinds that cannot work here are skipped with the reason (no IRQs on a veth, no tuned...).
"""
import os
import shutil
from pathlib import Path

import pytest

from nettune.errors import NettuneError, SpecError
from nettune.knobs.base import KnobError, Loc
from nettune.knobs.journal import Journal
from nettune.knobs.registry import KINDS
from nettune.knobs.apply import KnobSession
from nettune.knobs.precheck import precheck
from nettune.plan.points import expand_and_check
from nettune import parse_study
from nettune.targets.lab.lab import LabTarget
from nettune.targets.local import LocalHost

from conftest import hostwide, needs_root

pytestmark = [needs_root, hostwide]

NAME = "tk-kinds"
BASE = f"""
name = "{NAME}"
[target]
kind = "lab"
mtu = 1500
queues = 2
[workload]
duration = 1
"""


@pytest.fixture(scope="module")
def lab():
    target = LabTarget(parse_study(BASE))
    target.up(1500, 2)
    try:
        yield target
    finally:
        target.close()


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def session(lab, knobs: str, sweep: str = ""):
    text = BASE + sweep + "\n[knobs]\n" + knobs
    study = parse_study(text)
    resolved = expand_and_check(study, text, "k.toml")
    precheck(study, lab, resolved, text, "k.toml")
    return KnobSession(study, lab, None), resolved


def value(host, key: str, device: str | None = "default"):
    kind, _, arg = key.partition(":")
    dev = host.interface if device == "default" and KINDS[kind].needs_device else (None if device == "default" else device)
    return KINDS[kind].read(host, Loc(key, kind, arg or None, dev))


def check_kind(lab, key: str, new, other, host: str = "server", sweep: str = "", knob_value: str | None = None):
    """apply -> reads new; restore -> reads the original; changed behind our back -> left alone."""
    h = lab.hosts[host] if host != "machine" else LocalHost("machine")
    kind = KINDS[key.split(":")[0]]
    before = value(h, key)
    toml_value = knob_value if knob_value is not None else (f'"{new}"' if isinstance(new, str) else str(new))
    s, rps = session(lab, f'"{key}" = {toml_value}\n', sweep)
    try:
        in_force = s.apply_point(rps[0])
        assert kind.same(value(h, key), new), f"{key} not applied"
        assert any(key in v for v in in_force.values())
    finally:
        assert not s.restore_all()
    assert kind.same(value(h, key), before), f"{key} not restored"
    assert not Journal().open_sessions()

    # restore only if the value is still the one nettune wrote
    s, rps = session(lab, f'"{key}" = {toml_value}\n', sweep)
    s.apply_point(rps[0])
    loc = Loc(key, kind.name, key.partition(":")[2] or None, h.interface if kind.needs_device else None)
    kind.apply(h, loc, other)  # someone else changes it
    try:
        warnings = s.restore_all()
        assert kind.same(value(h, key), other)
        if kind.same(other, before):  # put back by someone else: nothing left to do
            assert warnings == []
        else:
            assert warnings and "someone else" in warnings[0] and key in warnings[0]
    finally:
        kind.apply(h, loc, before)
    assert kind.same(value(h, key), before)


def test_sysctl_per_namespace(lab):
    check_kind(lab, "sysctl:net.ipv4.tcp_rmem", "4096 131072 7000000", "4096 131072 5000000")
    # the other namespace was never touched
    assert value(lab.hosts["client"], "sysctl:net.ipv4.tcp_rmem") == value(lab.hosts["server"], "sysctl:net.ipv4.tcp_rmem")


def test_sysctl_host_wide_is_set_once_on_the_machine(lab):
    host = LocalHost("machine")
    before = value(host, "sysctl:net.core.rmem_max")
    new = str(int(before) + 4096)
    s, rps = session(lab, f'"sysctl:net.core.rmem_max" = "{new}"\n')
    in_force = s.apply_point(rps[0])
    assert in_force == {"machine": {"sysctl:net.core.rmem_max": new}}  # once, not per lab host
    assert any("host-wide" in m for m in s.take_messages())
    assert value(host, "sysctl:net.core.rmem_max") == new
    s.restore_all()
    assert value(host, "sysctl:net.core.rmem_max") == before
    check_kind(lab, "sysctl:net.core.rmem_max", new, str(int(before) + 8192), host="machine")


def test_cc(lab):
    avail = value(lab.hosts["server"], "sysctl:net.ipv4.tcp_allowed_congestion_control").split()
    cur = value(lab.hosts["server"], "cc")
    others = [a for a in avail if a != cur]
    if len(avail) < 2 or not others:
        pytest.skip(f"needs two congestion controls allowed in a namespace (allowed: {avail})")
    check_kind(lab, "cc", others[0], cur if len(avail) == 2 else others[1])


def test_mtu(lab):
    check_kind(lab, "mtu", 1400, 1300)


def test_txqueuelen(lab):
    check_kind(lab, "txqueuelen", 5000, 3000)


def test_offload_gro(lab):
    h = lab.hosts["server"]
    cur = value(h, "offload:gro")
    new = "off" if cur == "on" else "on"
    s, rps = session(lab, f'"offload:gro" = "{new}"\n')
    assert s.apply_point(rps[0])["server"] == {"offload:gro": new}
    assert value(h, "offload:gro") == new
    assert not s.restore_all()
    assert value(h, "offload:gro") == cur


def test_offload_left_alone_when_changed_back_by_someone_else(lab):
    """on/off has no third value: someone flipping it back to the original is "already restored"."""
    h = lab.hosts["client"]
    cur = value(h, "offload:tso")
    new = "off" if cur == "on" else "on"
    s, rps = session(lab, f'"offload:tso" = "{new}"\n')
    s.apply_point(rps[0])
    assert value(h, "offload:tso") == new
    KINDS["offload"].apply(h, Loc("offload:tso", "offload", "tso", h.interface), cur)
    assert s.restore_all() == []
    assert value(h, "offload:tso") == cur


def test_offload_fixed_feature_is_refused_before_any_change(lab):
    # lro is fixed off on veth
    with pytest.raises(SpecError, match="fixed"):
        session(lab, '"offload:lro" = "on"\n')


def test_channels(lab):
    # the lab veth has 2 queues: channels 1 <-> 2 (rx and tx, veth has no combined)
    cur = value(lab.hosts["server"], "channels")
    n = 1 if list(cur.values())[0] == 2 else 2
    check_kind(lab, "channels", n, 2 if n == 1 else 1)


def test_channels_above_the_device_maximum_is_refused(lab):
    with pytest.raises(SpecError, match="more than"):
        session(lab, '"channels" = 8\n')


def test_ring(lab):
    try:
        session(lab, '"ring" = 512\n')
    except SpecError as e:
        assert "ring" in str(e)
        pytest.skip(f"veth has no descriptor rings here: {e}")
    check_kind(lab, "ring", 512, 256)


def test_rps_and_xps(lab):
    cpus = os.cpu_count() or 1
    check_kind(lab, "rps", "1", "2" if cpus > 1 else "0")
    check_kind(lab, "xps", "1", "2" if cpus > 1 else "0")
    check_kind(lab, "rps:1", "1", "0")


def test_mask_beyond_cpu_count_is_refused(lab):
    with pytest.raises(SpecError, match="CPU"):
        session(lab, f'"rps" = "{format(1 << (os.cpu_count() or 1), "x")}"\n')


def test_qdisc_replace_and_restore(lab):
    h = lab.hosts["server"]
    kind = KINDS["qdisc"]
    before = value(h, "qdisc")
    s, rps = session(lab, '"qdisc" = "tbf rate 1gbit burst 64k latency 20ms"\n')
    s.apply_point(rps[0])
    assert value(h, "qdisc")["qdiscs"][0].startswith("qdisc tbf")
    assert not s.restore_all()
    assert kind.same(value(h, "qdisc"), before)


def test_qdisc_whole_tree_is_saved_and_rebuilt(lab):
    """An htb tree with a class and a child qdisc comes back exactly after a replace."""
    h = lab.hosts["client"]
    dev = h.interface
    for argv in (
        ["tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "10"],
        ["tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", "100mbit"],
        ["tc", "qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "tbf", "rate", "50mbit", "burst", "16k", "latency", "20ms"],
    ):
        assert h.run(argv).returncode == 0, argv
    try:
        tree = value(h, "qdisc")
        assert len(tree["qdiscs"]) == 2 and any("htb" in c for c in tree["classes"])
        s, rps = session(lab, '"qdisc" = "tbf rate 1gbit burst 64k latency 20ms"\n[knobs.hosts]\n"qdisc" = ["client"]\n')
        s.apply_point(rps[0])
        assert value(h, "qdisc")["qdiscs"][0].startswith("qdisc tbf")
        assert not s.restore_all()
        assert value(h, "qdisc") == tree
    finally:
        h.run(["tc", "qdisc", "del", "dev", dev, "root"])


def test_missing_qdisc_is_named_before_the_study(lab):
    probe = KINDS["qdisc"]
    r = lab.hosts["server"].run(["tc", "qdisc", "replace", "dev", lab.hosts["server"].interface, "root", "netem", "delay", "1ms"])
    lab.hosts["server"].run(["tc", "qdisc", "del", "dev", lab.hosts["server"].interface, "root"])
    if r.returncode == 0:
        pytest.skip("this kernel has sch_netem; nothing missing to report")
    with pytest.raises(SpecError, match="no netem qdisc.*available:"):
        session(lab, '"qdisc" = "netem delay 10ms"\n')
    assert probe is not None


def test_irq_affinity_on_a_veth_is_refused(lab):
    with pytest.raises(SpecError, match="no IRQs"):
        session(lab, '"irq_affinity" = "0"\n')


def _writable_irq() -> tuple[str, str] | None:
    """An IRQ of a real NIC whose affinity can be set (and its current CPU list)."""
    for dev in sorted(os.listdir("/sys/class/net")):
        try:
            irqs = KINDS["irq_affinity"].irqs(LocalHost("m"), Loc("irq_affinity", "irq_affinity", None, dev))
        except KnobError:
            continue
        for n in irqs:
            path = Path(f"/proc/irq/{n}/smp_affinity_list")
            cur = path.read_text().strip()
            try:
                path.write_text(cur)
            except OSError:
                continue
            return n, cur
    return None


def test_irq_affinity_on_a_real_irq(lab):
    found = _writable_irq()
    if found is None or (os.cpu_count() or 1) < 2:
        pytest.skip("no NIC IRQ with settable affinity here (virtual NICs only, or one CPU)")
    n, cur = found
    key = f"irq_affinity:{n}"
    h = LocalHost("machine")
    before = value(h, key, None)
    s, rps = session(lab, f'"{key}" = "0"\n')
    assert s.apply_point(rps[0]) == {"machine": {key: "0"}}
    assert value(h, key, None) == {n: "0"}
    s.restore_all()
    assert value(h, key, None) == before


def test_tuned(lab):
    if shutil.which("tuned-adm") is None:
        with pytest.raises(SpecError, match="tuned is not installed"):
            session(lab, '"tuned" = "throughput-performance"\n')
        pytest.skip("tuned is not installed here (checked: a clear error before the study)")
    active = value(LocalHost("m"), "tuned")
    new = "throughput-performance" if active != "throughput-performance" else "balanced"
    check_kind(lab, "tuned", new, "powersave", host="machine")


def test_command_knob_value_is_an_argument_not_shell_text(lab, tmp_path):
    h = lab.hosts["server"]
    knob = (
        '"command:somaxconn" = {value = "3000", read = "cat /proc/sys/net/core/somaxconn", '
        "apply = 'printf %s \"$1\" > /proc/sys/net/core/somaxconn'}\n"
    )
    before = value(h, "sysctl:net.core.somaxconn")
    s, rps = session(lab, knob)
    assert s.apply_point(rps[0]) == {"server": {"command:somaxconn": "3000"}, "client": {"command:somaxconn": "3000"}}
    assert value(h, "sysctl:net.core.somaxconn") == "3000"
    assert not s.restore_all()
    assert value(h, "sysctl:net.core.somaxconn") == before
    # a value with shell syntax is passed as $1, never run
    marker = tmp_path / "pwned"
    evil = f"1; touch {marker}"
    s, rps = session(lab, knob.replace('value = "3000"', f'value = "{evil}"'))
    with pytest.raises(NettuneError):
        s.apply_point(rps[0])  # the kernel rejects the text; the shell never runs it
    s.restore_all()
    assert not marker.exists()
    assert value(h, "sysctl:net.core.somaxconn") == before


def test_knob_follows_a_recreated_interface(lab):
    """When the lab re-creates a veth (queues changed), the knob is applied again and the
    old interface's journal entries need no restore."""
    h = lab.hosts["server"]
    s, rps = session(lab, '"txqueuelen" = 4000\n')
    s.apply_point(rps[0])
    lab.net.recreate_veth("server", 1500, 2)
    assert value(h, "txqueuelen") == 1000
    s.apply_point(rps[0])
    assert value(h, "txqueuelen") == 4000
    assert any("re-created" in m for m in s.take_messages())
    assert not s.restore_all()
    assert value(h, "txqueuelen") == 1000
    assert not Journal().open_sessions()
