"""Lab nodes on real namespaces: hosts on node bridges, nodes joined by VXLAN over a shaped
underlay; same-node traffic stays on the node, cross-node traffic crosses the VXLAN
(counters read from netlink); everything removed at the end and by `nettune lab down`."""
import pytest
from pyroute2 import netns

from nettune import parse_study
from nettune.errors import SpecError
from nettune.plan import expand, resolve
from nettune.targets import lab_nodes, labnet
from nettune.targets.lab import LabTarget

from conftest import lab_leftovers, needs_iperf3, needs_root, nettune
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
