"""The documented SSH rehearsal: lab up --ssh, then examples/ssh-lab.toml against it."""
import json
import shutil

from conftest import EXAMPLES, lab_leftovers, needs_iperf3, needs_root, nettune

pytestmark = [needs_root, needs_iperf3]


def test_ssh_lab_example_runs_against_the_lab(tmp_path):
    # the example names its inventory as ../lab-hosts.toml, next to the examples folder
    (tmp_path / "examples").mkdir()
    quick = (EXAMPLES / "quick.toml").read_text().replace('name = "quick"', 'name = "nettune-t-sshex"')
    (tmp_path / "examples" / "quick.toml").write_text(quick)
    study = (EXAMPLES / "ssh-lab.toml").read_text().replace("duration = 2", "duration = 1")
    (tmp_path / "examples" / "ssh-lab.toml").write_text(study)
    inv = tmp_path / "lab-hosts.toml"
    db = tmp_path / "r.db"
    try:
        nettune("lab", "up", str(tmp_path / "examples" / "quick.toml"), "--ssh", "--inventory", str(inv), check=True)
        nettune("run", str(tmp_path / "examples" / "ssh-lab.toml"), "--db", str(db), check=True)
        recs = json.loads(nettune("results", "--db", str(db), "--format", "json", check=True).stdout)
    finally:
        nettune("lab", "down")
    assert [r["point"]["streams"] for r in recs] == [1, 2, 4]
    assert all(r["ok"] and r["receiver_bps"] > 0 and r["cpu_client"] > 0 and r["cpu_server"] > 0 for r in recs)
    assert not lab_leftovers()
    shutil.rmtree(tmp_path / "examples")
