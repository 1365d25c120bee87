"""Issue 30 on the real lab: a lab brought up by hand is the user's (a run uses it and
leaves it up); over-rate UDP on a shaped link is dropped at the bottleneck, not held back
in the sender's socket; the dry run's engine is the run's."""
import subprocess

from pyroute2 import netns

from conftest import lab_leftovers, nettune, needs_iperf3, needs_root

pytestmark = [needs_root, needs_iperf3]

OWN = """
name = "nettune-t-own"
[target]
kind = "lab"
mtu = 1500
[workload]
engine = "iperf3"
duration = 1
"""


def test_a_lab_brought_up_by_hand_is_used_and_left_up_and_only_a_runs_own_lab_is_removed(tmp_path):
    f, db = tmp_path / "own.toml", tmp_path / "r.db"
    f.write_text(OWN)
    ns = "nettune-nettune-t-own-server"
    try:
        nettune("lab", "up", str(f), check=True)
        user = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "300"])  # the user's own process in their lab
        f.write_text(OWN.replace("mtu = 1500", 'mtu = "{mtu}"') + "[sweep]\nmtu = [9000]\n")  # the run changes the MTU
        r = nettune("run", str(f), "--db", str(db), check=True)
        assert "1 tests" in r.stdout
        assert ns in netns.listnetns() and user.poll() is None  # the lab and the user's process are still there
        mtu = subprocess.run(["ip", "netns", "exec", ns, "cat", "/sys/class/net/" + _nic(ns) + "/mtu"], capture_output=True, text=True).stdout
        assert mtu.strip() == "1500"  # put back as `lab up` left it
        assert "nettune-t-own" in nettune("lab", "status", check=True).stdout
        nettune("lab", "down", "nettune-t-own", check=True)
        assert ns not in netns.listnetns()
        user.wait(timeout=10)
        # without `lab up`, the run creates its lab and removes it
        nettune("run", str(f), "--db", str(db), check=True)
        assert ns not in netns.listnetns()
    finally:
        nettune("lab", "down", "nettune-t-own", "--force")
    assert not any("nettune-t-own" in n for n in lab_leftovers().get("namespaces", []))


def _nic(ns: str) -> str:
    out = subprocess.run(["ip", "netns", "exec", ns, "ls", "/sys/class/net"], capture_output=True, text=True).stdout.split()
    return next(n for n in out if n != "lo")
