"""The documented SSH rehearsals: lab up --ssh, then examples/ssh-lab.toml against it; lab up
--ssh --bastion --ssh-config, then examples/bastion-lab.toml (hosts named only)."""
import json
import shutil

from conftest import EXAMPLES, lab_leftovers, needs_iperf3, needs_root, nettune

pytestmark = [needs_root, needs_iperf3]


def _copy_examples(tmp_path, study: str, lab_name: str):
    """quick.toml (the lab) and `study` copied into tmp_path/examples, 1-second tests."""
    (tmp_path / "examples").mkdir()
    quick = (EXAMPLES / "quick.toml").read_text().replace('name = "quick"', f'name = "{lab_name}"')
    (tmp_path / "examples" / "quick.toml").write_text(quick)
    (tmp_path / "examples" / study).write_text((EXAMPLES / study).read_text().replace("duration = 2", "duration = 1"))
    return tmp_path / "examples" / "quick.toml", tmp_path / "examples" / study


def test_ssh_lab_example_runs_against_the_lab(tmp_path):
    # the example names its inventory as ../lab-hosts.toml, next to the examples folder
    lab, study = _copy_examples(tmp_path, "ssh-lab.toml", "nettune-t-sshex")
    inv = tmp_path / "lab-hosts.toml"
    db = tmp_path / "r.db"
    try:
        nettune("lab", "up", str(lab), "--ssh", "--inventory", str(inv), check=True)
        nettune("run", str(study), "--db", str(db), check=True)
        recs = json.loads(nettune("results", "--db", str(db), "--format", "json", check=True).stdout)
    finally:
        nettune("lab", "down", "nettune-t-sshex")  # this lab only: never another test's
    assert [r["point"]["streams"] for r in recs] == [1, 2, 4]
    assert all(r["ok"] and r["receiver_bps"] > 0 and r["cpu_client"] > 0 and r["cpu_server"] > 0 for r in recs)
    assert not lab_leftovers()
    shutil.rmtree(tmp_path / "examples")


def test_bastion_lab_example_names_hosts_only(tmp_path):
    lab, study = _copy_examples(tmp_path, "bastion-lab.toml", "nettune-t-bastex")
    db = tmp_path / "r.db"
    try:
        nettune("lab", "up", str(lab), "--ssh", "--bastion", "--ssh-config", str(tmp_path / "lab.ssh_config"), check=True)
        nettune("run", str(study), "--db", str(db), check=True)
        recs = json.loads(nettune("results", "--db", str(db), "--format", "json", check=True).stdout)
        hosts = nettune("hosts", str(study), check=True).stdout
    finally:
        nettune("lab", "down", "nettune-t-bastex")
    assert [r["point"]["streams"] for r in recs] == [1, 2]
    assert all(r["ok"] and r["receiver_bps"] > 0 for r in recs)
    assert hosts.count("bastion (root@") == 2
    assert not lab_leftovers()
    shutil.rmtree(tmp_path / "examples")
