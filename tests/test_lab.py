"""The built-in lab on real namespaces: creation, queues, MTU, teardown, leftovers."""
import ipaddress
import os
import subprocess
import time

import pytest
from pyroute2 import netns

from nettune.errors import NettuneError, SpecError
from nettune.plan import expand, resolve
from nettune import parse_study
from nettune.targets.lab import labnet
from nettune.targets.lab.lab import LabTarget
from nettune.targets.lab.labnet import LabLayout

from conftest import lab_leftovers, needs_root, nettune

pytestmark = needs_root

STUDY = """
name = "nettune-t-lab"
[target]
kind = "lab"
hosts = ["a", "b", "c"]
mtu = "{mtu}"
queues = "{queues}"
[workload]
server = "a"
client = "b"
[sweep]
queues = [1, 4]
mtu = [1500, 9000]
"""


def test_lab_layout_queues_mtu_and_teardown():
    study = parse_study(STUDY)
    target = LabTarget(study)
    try:
        states = [target.prepare(resolve(study, p)) for p in expand(study)]
        # points: (q1, 1500), (q1, 9000), (q4, 1500), (q4, 9000)
        assert [s["hosts"]["a"]["tx_queues"] for s in states] == [1, 1, 4, 4]
        assert [s["hosts"]["c"]["mtu"] for s in states] == [1500, 9000, 1500, 9000]
        for h in ("a", "b", "c"):
            assert target.layout.ns(h) in netns.listnetns()
        addrs = {h: target.hosts[h].address for h in "abc"}
        assert all(a.startswith("198.1") for a in addrs.values()) and len(set(addrs.values())) == 3
        # the namespaces really talk over the bridge: b reaches a's address
        r = target.hosts["b"].run(["python3", "-c", f"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(('{addrs['a']}', 9)); print(s.getsockname()[0])"])
        assert r.stdout.strip() == addrs["b"]
        # per-namespace view of /sys and /proc/sys
        assert target.hosts["a"].read_text(f"/sys/class/net/{target.hosts['a'].interface}/mtu").strip() == "9000"
    finally:
        target.close()
    assert not any(n.startswith("nettune-nettune-t-lab") for n in netns.listnetns())
    assert not [n for n in os.listdir("/sys/class/net") if n.startswith("nt" + target.layout.sid)]


def _netlink_fds() -> int:
    """This process's open sockets (netlink ones into a namespace keep it alive; they show
    in that namespace's /proc/net/netlink, not ours, so every socket counts)."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            continue
    return n


def test_namespace_files_ports_and_netlink_sockets_of_a_lab():
    """Namespace files are read and written from inside the namespace (a thread there), a
    listening port is seen in its namespace only, and the lab's netlink sockets, kept for
    its life, are all closed by close() and by a one-off LabNet's with-block."""
    study = parse_study(STUDY)
    before = _netlink_fds()
    target = LabTarget(study)
    try:
        target.prepare(resolve(study, expand(study)[0]))
        assert _netlink_fds() > before  # one per namespace, kept
        a, b = target.hosts["a"], target.hosts["b"]
        a.write_text("/proc/sys/net/ipv4/tcp_rmem", "4096 12345 67890")
        assert a.read_text("/proc/sys/net/ipv4/tcp_rmem").split() == ["4096", "12345", "67890"]
        assert b.read_text("/proc/sys/net/ipv4/tcp_rmem").split() != ["4096", "12345", "67890"]
        with pytest.raises(OSError, match="nope"):
            a.read_text("/proc/sys/net/ipv4/nope")
        srv = a.spawn(["python3", "-c", "import socket,time; s=socket.socket(); s.bind(('0.0.0.0', 5999)); s.listen(); time.sleep(30)"])
        try:
            for _ in range(200):
                if a.listening(5999):
                    break
                time.sleep(0.02)
            assert a.listening(5999) and not b.listening(5999)
            assert "0A" in [ln.split()[3] for ln in a.read_text("/proc/net/tcp").splitlines()[1:] if ln.split()[1].endswith(":176F")]
        finally:
            srv.stop()
        mid = _netlink_fds()
        with labnet.LabNet(target.layout) as net:  # a one-off use of the same lab (the bastion's way)
            net.set_mtu(1500)
            assert _netlink_fds() > mid
        assert _netlink_fds() == mid
    finally:
        target.close()
    assert _netlink_fds() == before


def test_a_namespace_that_is_gone_reads_as_an_error_and_listens_on_nothing():
    from nettune.targets.lab.lab import LabHost

    gone = LabHost("a", "nettune-t-lab-never-made", "198.18.0.11", "eth0")
    assert gone.listening(5201) is False and gone.listening(5201, "udp") is False
    with pytest.raises(OSError):
        gone.read_text("/proc/sys/net/ipv4/tcp_rmem")
    with pytest.raises(OSError):
        gone.write_text("/proc/sys/net/ipv4/tcp_rmem", "4096 1 2")


def test_subnet_outside_benchmark_range_is_refused():
    # refused when the file is read, before a target exists (the lab's own check stays as a guard)
    with pytest.raises(SpecError, match=r"target\.subnet: .*198\.18\.0\.0/15"):
        parse_study(STUDY.replace('hosts = ["a", "b", "c"]', 'hosts = ["a", "b", "c"]\nsubnet = "10.0.0.0/24"'))
    with pytest.raises(SpecError, match=r"target\.subnet: .*/24 inside"):
        parse_study(STUDY.replace('hosts = ["a", "b", "c"]', 'hosts = ["a", "b", "c"]\nsubnet = "198.18.40.0/25"'))
    # a larger block of the range is a lab's (the VM lab's guests need a /24 exactly)
    assert parse_study(STUDY.replace('hosts = ["a", "b", "c"]', 'hosts = ["a", "b", "c"]\nsubnet = "198.18.40.0/23"')).target.subnet == "198.18.40.0/23"
    with pytest.raises(NettuneError, match="198.18.0.0/15"):
        LabLayout("t", ["a"], ipaddress.ip_network("10.0.0.0/24"))


def test_lab_up_status_down_cli(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(STUDY.replace("nettune-t-lab", "nettune-t-cli"))
    r = nettune("lab", "up", str(f), check=True)
    assert "nettune-nettune-t-cli-a" in r.stdout
    r = nettune("lab", "status", check=True)
    assert "nettune-nettune-t-cli-a" in r.stdout
    # a process left running inside the lab (as after kill -9 of a run) is stopped by down
    p = subprocess.Popen(["ip", "netns", "exec", "nettune-nettune-t-cli-a", "sleep", "60"])
    r = nettune("lab", "down", check=True)
    assert "nettune-nettune-t-cli-a" in r.stdout
    assert p.wait(timeout=10) != 0
    assert "nettune-nettune-t-cli-a" not in netns.listnetns()
    assert "nettune-t-cli" not in nettune("lab", "down", check=True).stdout
    assert not any("nettune-t-cli" in n for n in lab_leftovers().get("namespaces", []))


def test_default_subnets_stay_in_benchmark_range():
    import ipaddress

    nets = {labnet.default_subnet(f"s{i}") for i in range(300)}
    assert all(n.subnet_of(ipaddress.ip_network("198.18.0.0/15")) for n in nets)
    assert all(int(n.network_address.packed[2]) != 0 for n in nets)
