"""`nettune ceiling` on remote hosts: each is measured on its own loopback through SSH (the
lab's sshd in a namespace stands in for a remote machine), by name from an inventory or
as a study's test hosts; a name the inventory lacks is a one-line error."""
from __future__ import annotations

import socket
from pathlib import Path

from nettune.store import Store
from nettune.targets.ssh import sshlab
from nettune.targets.lab.labnet import pids_in_namespace

from conftest import needs_iperf3, needs_root, nettune
from sshlab_util import lab_fixture, private_state  # noqa: F401 - private_state: autouse fixture

pytestmark = [needs_root, needs_iperf3]
LAB, HOSTS, SUBNET = "t-ceil-ssh", ["server", "client"], "198.19.219.0/24"
lab = lab_fixture(LAB, HOSTS, SUBNET)


def logins(host: str) -> int:
    return (sshlab.study_dir(LAB) / host / "sshd.log").read_text().count("Accepted publickey")


def test_named_host_is_measured_on_its_own_loopback_over_ssh(lab, tmp_path):
    db = tmp_path / "c.db"
    before = logins("server")
    r = nettune("ceiling", "server", "--inventory", str(lab["inventory"]), "--duration", "1", "--max-streams", "1", "--db", str(db))
    assert r.returncode == 0, r.stdout + r.stderr
    me = socket.gethostname()
    assert f"server ({me}): 2 loopback tests of 1s" in r.stdout  # iperf3 and iperf2 at -P 1, on the remote side
    assert "ceiling iperf3:" in r.stdout and "ceiling iperf2:" in r.stdout
    with Store(db) as s:
        rows = s.ceiling_rows()
    assert {r["engine"] for r in rows} == {"iperf3", "iperf2"} and all(r["bps"] and r["machine"] == me for r in rows)
    # the tests ran in the lab host's namespace, reached over ssh: its sshd logged our logins
    assert logins("server") > before and logins("client") == 0
    ns = lab["layout"].ns("server")  # nothing of ours left running in the host's namespace
    assert not [p for p in pids_in_namespace(ns) if Path(f"/proc/{p}/comm").read_text().strip() in ("iperf3", "iperf")]


def test_study_hosts_that_share_a_machine_are_measured_once(lab, tmp_path):
    study = tmp_path / "s.toml"
    study.write_text(f'name = "t-ceil-ssh-study"\n[target]\nkind = "ssh"\ninventory = "{lab["inventory"]}"\n'
                     '[workload]\nserver = "server"\nclient = "client"\nduration = 1\n')
    r = nettune("ceiling", str(study), "--duration", "1", "--max-streams", "1", "--db", str(tmp_path / "c.db"))
    assert r.returncode == 0, r.stdout + r.stderr
    # both lab hosts are namespaces of one machine: one ceiling for it, not two
    assert r.stdout.count("loopback tests of 1s") == 1


def test_unknown_host_is_a_one_line_error(lab, tmp_path):
    r = nettune("ceiling", "nosuchhost", "--inventory", str(lab["inventory"]), "--db", str(tmp_path / "r.db"))
    assert r.returncode != 0 and r.stderr.startswith("error: ") and "nosuchhost" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not Path(tmp_path / "r.db").exists()
