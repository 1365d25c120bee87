"""The built-in lab on real namespaces: creation, queues, MTU, teardown, leftovers."""
import ipaddress
import os
import subprocess

import pytest
from pyroute2 import netns

from nettune.errors import NettuneError, SpecError
from nettune.plan import expand, resolve
from nettune import parse_study
from nettune.targets import labnet
from nettune.targets.lab import LabTarget
from nettune.targets.labnet import LabLayout

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


def test_subnet_outside_benchmark_range_is_refused():
    # refused when the file is read, before a target exists (the lab's own check stays as a guard)
    with pytest.raises(SpecError, match=r"target\.subnet: .*198\.18\.0\.0/15"):
        parse_study(STUDY.replace('hosts = ["a", "b", "c"]', 'hosts = ["a", "b", "c"]\nsubnet = "10.0.0.0/24"'))
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
