"""Lab nodes on real namespaces: hosts on node bridges, nodes joined by VXLAN over a shaped
underlay; same-node traffic stays on the node, cross-node traffic crosses the VXLAN
(counters read from netlink); everything removed at the end and by `nettune lab down`."""
import json

import pytest
from pyroute2 import netns

from nettune import parse_study
from nettune.errors import SpecError
from nettune.plan import expand, resolve
from nettune.targets.lab import lab_nodes, labnet
from nettune.targets.lab.lab import LabTarget

from conftest import EXAMPLES, lab_leftovers, needs_iperf3, needs_root, nettune, write_study
from lab_measure import iperf3_bps

STUDY = """
name = "nettune-t-nodes"
[target]
kind = "lab"
nodes = { n1 = ["a", "b"], n2 = ["c"] }
[target.link]
rate = "2G"
[target.underlay]
rate = "300M"
mtu = 1500
[workload]
server = "a"
client = "c"
"""


def test_nodes_spec_defaults_and_errors():
    st = parse_study(STUDY)
    assert st.target.hosts == ["a", "b", "c"] and st.target.mtu == 1450  # the overlay's MTU
    assert st.target.node_of("c") == "n2"
    for bad, why in [
        ('nodes = { n1 = ["a"], n2 = ["a"] }', "two nodes"),
        ('hosts = ["a", "b"]\nnodes = { n1 = ["a"] }', "not placed"),
        ('nodes = { n1 = ["a", "b"] }\nmtu = 1500', "overlay"),
    ]:
        with pytest.raises(SpecError, match=why):
            parse_study(f'name = "x"\n[target]\nkind = "lab"\n{bad}\n[workload]\nserver = "a"\nclient = "b"\n')
    with pytest.raises(SpecError, match="underlay needs nodes"):
        parse_study('name = "x"\n[target]\nkind = "lab"\n[target.underlay]\nrate = "1G"\n')


@needs_root
@needs_iperf3
def test_cross_node_crosses_the_vxlan_and_same_node_does_not():
    st = parse_study(STUDY)
    target = LabTarget(st)
    lay = target.layout
    try:
        state = target.prepare(resolve(st, expand(st)[0]))
        assert state["nodes"]["n1"]["overlay_mtu"] == 1450 and state["nodes"]["n1"]["underlay_mtu"] == 1500
        assert state["hosts"]["a"]["mtu"] == 1450
        before = lab_nodes.vxlan_counters(lay, "n1")
        same = iperf3_bps(target, "a", "b")
        mid = lab_nodes.vxlan_counters(lay, "n1")
        cross = iperf3_bps(target, "a", "c")
        after = lab_nodes.vxlan_counters(lay, "n1")
        # a -> b: the frames stay on n1's bridge (a few flooded ARPs at most)
        assert mid["rx_bytes"] - before["rx_bytes"] < 1_000_000 < same * 2 / 8 / 10
        # c -> a: every byte came in through n1's VXLAN device
        assert after["rx_bytes"] - mid["rx_bytes"] > cross * 2 / 8 * 0.9
        n2 = lab_nodes.vxlan_counters(lay, "n2")
        assert n2["tx_bytes"] > cross * 2 / 8 * 0.9
        # the underlay (300M) is the cross-node bottleneck; the pods' 2G links the same-node one
        assert 0.7 * 300e6 < cross < 1.05 * 300e6 and same > 3 * cross
    finally:
        target.close()
    assert lab_leftovers() == {}
    assert not [n for n in netns.listnetns() if n.startswith("nettune-nettune-t-nodes")]


@needs_root
def test_lab_down_removes_node_namespaces_and_underlay(tmp_path):
    st = parse_study(STUDY)
    target = LabTarget(st)
    target.up(1450, 1)
    target._created = False  # leave it as a killed run would
    lay = target.layout
    assert lay.node_ns("n1") in netns.listnetns() and lay.underlay_if("n2") in labnet.leftovers()["links"]
    p = nettune("lab", "down", "nettune-t-nodes", "--force")
    assert p.returncode == 0, p.stdout + p.stderr
    assert lab_leftovers() == {}
    assert not [n for n in netns.listnetns() if n.startswith("nettune-nettune-t-nodes")]


PLACED = """
name = "nettune-t-place"
[target]
kind = "lab"
nodes = { n1 = ["server", "client"], n2 = [] }
placement = "{placement}"
[target.underlay]
rate = "300M"
[workload]
server = "server"
client = "client"
[sweep]
placement = ["same-node", "cross-node", "same-node"]
"""


@needs_root
@needs_iperf3
def test_placement_moves_the_client_between_nodes_per_point():
    st = parse_study(PLACED)
    target = LabTarget(st)
    lay = target.layout
    try:
        seen = []
        for p in expand(st):
            state = target.prepare(resolve(st, p))
            before = lab_nodes.vxlan_counters(lay, "n1")
            bps = iperf3_bps(target, "server", "client")
            crossed = lab_nodes.vxlan_counters(lay, "n1")["rx_bytes"] - before["rx_bytes"]
            seen.append((state["nodes"]["n2"]["hosts"], crossed > bps * 2 / 8 * 0.9, bps < 1.05 * 300e6))
        assert seen == [([], False, False), (["client"], True, True), ([], False, False)]
    finally:
        target.close()
    assert lab_leftovers() == {}


def test_placement_needs_nodes_and_two_nodes_for_cross():
    with pytest.raises(SpecError, match="placement needs nodes"):
        parse_study('name = "x"\n[target]\nkind = "lab"\nplacement = "same-node"\n')
    with pytest.raises(SpecError, match="two nodes"):
        parse_study('name = "x"\n[target]\nkind = "lab"\nnodes = { n1 = ["server", "client"] }\nplacement = "cross-node"\n')


@needs_root
@needs_iperf3
def test_study_e_lab_example_gives_placement_and_sysctl_verdicts(tmp_path):
    text = (EXAMPLES / "study-e-lab.toml").read_text()
    text = text.replace("duration = 3", "duration = 1").replace("streams = [1, 4]", "streams = [1]").replace("runs = 3", "runs = 2")
    text = text.replace('name = "study-e-lab"', 'name = "nettune-t-studye"')
    study, db = write_study(tmp_path, text), str(tmp_path / "r.db")
    nettune("run", str(study), "--db", db, check=True)
    place = json.loads(nettune("compare", "nettune-t-studye", "--db", db, "--format", "json", "--a", "placement=same-node,rmem=6291456",
                               "--b", "placement=cross-node,rmem=6291456", check=True).stdout)
    rmem = json.loads(nettune("compare", "nettune-t-studye", "--db", db, "--format", "json", "--a", "placement=same-node,rmem=4096",
                              "--b", "placement=same-node,rmem=6291456", check=True).stdout)
    assert place["verdict"] == "slower" and place["mean_b"] < 0.6 * place["mean_a"]  # 2G underlay vs 5G pod links
    assert rmem["verdict"] == "faster" and rmem["mean_b"] > 3 * rmem["mean_a"]  # a 4 KiB receive buffer starves TCP
    assert lab_leftovers() == {}


@needs_root
def test_lab_up_ssh_refuses_a_lab_with_nodes(tmp_path):
    study = write_study(tmp_path, STUDY.replace("nettune-t-nodes", "nettune-t-nodessh"))
    try:
        p = nettune("lab", "up", str(study), "--ssh")
        assert p.returncode != 0 and "not reachable over SSH" in p.stdout + p.stderr and "Traceback" not in p.stderr
    finally:
        nettune("lab", "down", "nettune-t-nodessh", "--force")
    assert lab_leftovers() == {}
