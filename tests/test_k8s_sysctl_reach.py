"""Where each sysctl of nettune's Kubernetes table acts, measured on this machine's kernel:
a network namespace made before a host-wide change and one made after it (what a pod is:
its own network namespace, made by the runtime from the node's).

studyfile/k8s_sysctl_classes.ACTS says, per sysctl: NODE (one value per machine: absent in
a namespace, or there read-only with the machine's value), COPIED (per namespace; a new one
starts from the machine's value at that moment, an older one keeps its own), DEFAULT (per
namespace; a new one starts from the kernel's default, whatever the machine has). The host
values are changed through a knob session on a local target, so they are journaled and put
back (the journal restores them after a crash too). Needs root; runs under the host-wide
lock (and, as every lab test, under /tmp/nettune-labtests.lock)."""
from pathlib import Path

import pytest
from pyroute2 import netns

from nettune import parse_study
from nettune.knobs.apply import KnobSession
from nettune.plan.points import expand_and_check
from nettune.studyfile.k8s_sysctl_classes import ACTS, COPIED, DEFAULT, NODE
from nettune.targets import make_target
from nettune.targets.netns_access import read_in_netns

from conftest import hostwide, needs_root

pytestmark = [needs_root, hostwide]
BEFORE, AFTER = "ntk8s-reach-before", "ntk8s-reach-after"


def path(name: str) -> str:
    return "/proc/sys/" + name.replace(".", "/")


def norm(text: str) -> str:
    return " ".join(text.split())


def other_value(name: str, now: str) -> str | None:
    """A value other than `now` that is harmless for a second on a shared machine."""
    if name == "net.ipv4.tcp_congestion_control":
        return "reno" if now != "reno" else "cubic"
    if name == "net.ipv4.ip_local_reserved_ports" and not now:
        return None  # empty by default: the sysctl knob cannot put an empty value back, so it is not changed here
    if name == "net.ipv4.ping_group_range":
        return "0 0" if now != "0 0" else "1 0"
    words = now.split()
    if not words or not all(w.isdigit() for w in words):
        return None  # e.g. net.core.default_qdisc: its node-level nature is seen without changing it
    if len(words) == 1:
        n = int(words[0])
        return str(n - 1 if n > 1 else n + 1)  # tcp_syncookies 1 -> 0, tw_reuse 2 -> 1, notsent_lowat 2^32-1 -> 2^32-2
    if name == "net.ipv4.ip_local_port_range":
        return f"{int(words[0]) + 1} {words[1]}"
    return " ".join([words[0], str(int(words[1]) + 1), *words[2:]])  # tcp_rmem/tcp_wmem: the default field


def in_ns(ns: str, name: str) -> str | None:
    try:
        return norm(read_in_netns(ns, path(name)))
    except FileNotFoundError:
        return None


def writable_in_ns(ns: str, name: str) -> bool:
    import os

    from nettune.targets.netns_access import call_in_netns

    return call_in_netns(ns, lambda: os.access(path(name), os.W_OK))


@pytest.fixture
def namespaces():
    for ns in (BEFORE, AFTER):
        if ns in netns.listnetns():
            netns.remove(ns)
    yield
    for ns in (BEFORE, AFTER):
        if ns in netns.listnetns():
            netns.remove(ns)


def test_copied_default_and_node_sysctls_as_the_table_says(namespaces, tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    names = [n for n in ACTS if n.startswith("net.") and Path(path(n)).exists()]
    assert {"net.ipv4.tcp_rmem", "net.core.somaxconn", "net.core.rmem_max"} <= set(names)
    original = {n: norm(Path(path(n)).read_text()) for n in names}
    new = {n: v for n in names if (v := other_value(n, original[n])) is not None}
    netns.create(BEFORE)
    knobs = "".join(f'"sysctl:{n}" = "{v}"\n' for n, v in new.items())
    study = parse_study(f'name = "ntk8s-reach"\n[target]\nkind = "local"\n[workload]\nduration = 1\n[knobs]\n{knobs}')
    target = make_target(study)
    session = KnobSession(study, target, None)
    try:
        session.apply_point(expand_and_check(study)[0])
        assert all(norm(Path(path(n)).read_text()) == norm(v) for n, v in new.items())  # in force on the host
        netns.create(AFTER)
        seen = {n: (in_ns(BEFORE, n), in_ns(AFTER, n)) for n in names}
        node_ro = {n: writable_in_ns(AFTER, n) for n in names if seen[n][1] is not None and ACTS[n][0] == NODE}
    finally:
        session.restore_all()
        target.close()
    assert {n: norm(Path(path(n)).read_text()) for n in names} == original  # all put back
    checked = {}
    for n in names:
        where = ACTS[n][0]
        before, after = seen[n]
        if where != NODE and n not in new:  # not changed here (see other_value)
            continue
        if where == NODE:  # one value per machine: absent in a namespace, or the machine's own and read-only there
            assert after is None or (after == before == norm(new.get(n, original[n])) and not node_ro[n]), (n, seen[n])
        elif where == COPIED:  # the namespace made after the change has the new value, the older one keeps its own
            assert (before, after) == (original[n], norm(new[n])), (n, seen[n])
        elif where == DEFAULT:  # both start from the kernel default: the host's change reaches neither
            assert before == after and after != norm(new[n]), (n, seen[n], new[n])
        checked[n] = where
    # every class was seen on this kernel
    assert {COPIED, DEFAULT, NODE} <= set(checked.values()), checked
