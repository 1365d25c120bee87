"""Hosts behind a jump host, rehearsed on the lab (`nettune lab up --ssh --bastion`): the
test hosts' sshds take logins only from the bastion namespace, studies reach them naming
hosts only (the written ssh_config, or the written Ansible inventory with `group`), host
keys are checked at both hops, and a kill -9 mid-sweep is restored through the bastion.
Real sshds, real asyncssh, real iperf3; only 198.18.0.0/15 lab addresses."""
from __future__ import annotations

import ipaddress
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from nettune import load_study, parse_study
from nettune.errors import NettuneError
from nettune.run.study import run_study
from nettune.studyfile.ssh_hosts import SshHostSpec
from nettune.store.writer import StoreWriter
from nettune.targets.ssh import sshlab
from nettune.targets.lab.labnet import LabLayout, LabNet, pids_in_namespace
from nettune.targets.ssh.ssh import SshError, SshHost, SshTarget
from nettune.targets.ssh.sshproc import EventLoopThread

from conftest import needs_iperf3, needs_root, nettune
from sshlab_util import kill_9_once_changed, lab_text, netns_read, private_state, run_with_cut_sessions  # noqa: F401 - private_state is an autouse fixture

pytestmark = [needs_root, needs_iperf3]
NAME, HOSTS, SUBNET = "t-bastion", ["server", "client"], "198.19.217.0/24"
SOMAXCONN = "/proc/sys/net/core/somaxconn"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    d = tmp_path_factory.mktemp("bastion")
    (d / "lab.toml").write_text(lab_text(NAME, HOSTS, SUBNET))
    files = {"inventory": d / "inv.toml", "ssh_config": d / "lab.ssh_config", "ansible": d / "lab.yml"}
    layout = LabLayout(NAME, HOSTS + ["bastion"], ipaddress.ip_network(SUBNET))
    try:
        r = nettune("lab", "up", str(d / "lab.toml"), "--ssh", "--bastion", "--inventory", str(files["inventory"]),
                    "--ssh-config", str(files["ssh_config"]), "--ansible", str(files["ansible"]), check=True)
        assert "via bastion" in r.stdout and "OpenSSH client config written" in r.stdout
        yield {"dir": d, "layout": layout, **files}
    finally:
        LabNet(layout).down()
        sshlab.down(NAME)
        assert not any(pids_in_namespace(layout.ns(h)) for h in layout.hosts)


def quick(target: str, d: Path, name: str) -> Path:
    f = d / f"{name}.toml"
    f.write_text(f'name = "{name}"\n[target]\nkind = "ssh"\nreconnect_timeout = 5\n{target}\n'
                 '[workload]\nengine = "iperf3"\nserver = "server"\nclient = "client"\nduration = 1\n[repeat]\nruns = 1\n')
    return f


def accepted_from(host: str) -> list[str]:
    log = (sshlab.study_dir(NAME) / host / "sshd.log").read_text()
    return [ln.split(" from ")[1].split()[0] for ln in log.splitlines() if "Accepted publickey" in ln]


def test_only_the_bastion_gets_in(lab):
    lay, d = lab["layout"], sshlab.study_dir(NAME)
    # a direct connection to a test host's port 22 is refused at the connection (TCP reset
    # from the filter in its namespace), as a firewalled fleet refuses it: not only the login
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((lay.address("server"), 22), timeout=5).close()
    direct = SshHostSpec(address=lay.address("server"), user="root", key=str(d / "id_ed25519"), known_hosts=str(d / "known_hosts"))
    loop = EventLoopThread()
    host = SshHost("server", direct, loop, connect_timeout=5)
    try:
        with pytest.raises(SshError, match="cannot connect.*[Rr]efused"):
            host.connect()
    finally:
        host.close()
        loop.stop()
    # from the bastion's namespace the same port answers (sshd's banner)
    banner = subprocess.run(["ip", "netns", "exec", lay.ns("bastion"), sys.executable, "-c",
                             f"import socket; s = socket.create_connection(({lay.address('server')!r}, 22), timeout=5); print(s.recv(64).decode())"],
                            capture_output=True, text=True, timeout=30)
    assert banner.stdout.startswith("SSH-2.0-OpenSSH"), banner.stderr
    rules = subprocess.run(["ip", "netns", "exec", lay.ns("server"), "nft", "list", "table", "inet", sshlab.FILTER_TABLE],
                           capture_output=True, text=True, check=True).stdout
    assert f"ip saddr != {lay.address('bastion')}" in rules and "reject with tcp reset" in rules
    cfg = (d / "bastion" / "sshd_config").read_text()
    assert "AllowTcpForwarding yes" in cfg and f"PermitOpen {lay.address('server')}:22 {lay.address('client')}:22" in cfg
    assert "AllowTcpForwarding no" in (d / "server" / "sshd_config").read_text()


def test_quick_study_naming_hosts_only_through_ssh_config(lab, tmp_path):
    f = quick(f'ssh_config = "{lab["ssh_config"]}"\n[target.hosts.server]\n[target.hosts.client]', tmp_path, "t-bastion-cfg")
    study = load_study(f)
    assert [j.name for j in study.target.hosts["server"].jump] == ["bastion"]
    before = len(accepted_from("server"))
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(study, store, f.read_text(), str(f))
        runs = store.runs(out.study_id)
    assert out.status == "done" and runs and all(r["ok"] and r["receiver_bps"] > 1e6 for r in runs), [r["error"] for r in runs]
    new = accepted_from("server")[before:]
    assert new and set(new) == {lab["layout"].address("bastion")}  # every login came through the bastion


def test_quick_study_from_the_ansible_inventory(lab, tmp_path):
    f = quick(f'inventory = "{lab["ansible"]}"\ngroup = "{NAME}"', tmp_path, "t-bastion-ans")
    study = load_study(f)
    assert sorted(study.target.hosts) == sorted(HOSTS)  # the group only: not the bastion
    # -F lab.yml.ssh_config in ansible_ssh_common_args: ssh (and nettune) find the bastion there
    assert study.target.hosts["client"].jump[0].address == lab["layout"].address("bastion")
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(study, store, f.read_text(), str(f))
        runs = store.runs(out.study_id)
    assert out.status == "done" and runs and all(r["ok"] for r in runs), [r["error"] for r in runs]


def _other_key(tmp_path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    return " ".join((tmp_path / "other.pub").read_text().split()[:2])


@pytest.mark.parametrize("who", ["bastion", "server"])
def test_a_wrong_host_key_at_either_hop_is_refused(lab, tmp_path, who):
    lay = lab["layout"]
    kh = (sshlab.study_dir(NAME) / "known_hosts").read_text().splitlines()
    wrong = [f"{lay.address(who)} {_other_key(tmp_path)}" if ln.startswith(lay.address(who) + " ") else ln for ln in kh]
    (tmp_path / "kh").write_text("\n".join(wrong) + "\n")
    cfg = lab["ssh_config"].read_text().replace(str(sshlab.study_dir(NAME) / "known_hosts"), str(tmp_path / "kh"))
    (tmp_path / "cfg").write_text(cfg)
    study = parse_study(quick(f'ssh_config = "{tmp_path / "cfg"}"\n[target.hosts.server]\n[target.hosts.client]', tmp_path, "t-bastion-key").read_text())
    with pytest.raises(NettuneError, match="does NOT match") as e:
        SshTarget(study)
    assert ("jump host bastion" in str(e.value)) == (who == "bastion")
    assert f"server ({'root@' + lay.address('server')}" in str(e.value) or who == "bastion"


def test_kill_9_mid_sweep_then_restore_through_the_bastion(lab, tmp_path):
    lay = lab["layout"]
    before = {h: netns_read(lay, h, SOMAXCONN) for h in HOSTS}
    f = quick(f'ssh_config = "{lab["ssh_config"]}"\n[target.hosts.server]\n[target.hosts.client]', tmp_path, "t-bastion-kill")
    f.write_text(f.read_text().replace("duration = 1", "duration = 3") + '[sweep]\nmc = [1001, 1002]\n[knobs]\n"sysctl:net.core.somaxconn" = "{mc}"\n')
    kill_9_once_changed(f, tmp_path / "r.db", len(HOSTS), tmp_path / "run.out")
    assert {netns_read(lay, h, SOMAXCONN) for h in HOSTS} == {"1001"}
    r = nettune("restore")
    assert r.returncode == 0, r.stdout + r.stderr
    assert {h: netns_read(lay, h, SOMAXCONN) for h in HOSTS} == before


def test_hosts_command_shows_the_jump_chain_and_a_host_that_is_down(lab, tmp_path):
    f = quick(f'ssh_config = "{lab["ssh_config"]}"\n[target.hosts.server]\n[target.hosts.client]', tmp_path, "t-bastion-hosts")
    r = nettune("hosts", str(f))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("bastion (root@" + lab["layout"].address("bastion") + ":22)") == 2 and r.stdout.count(" ok ") >= 2
    sshlab.stop_sshd(NAME, "client")
    try:
        r = nettune("hosts", str(f))
    finally:
        sshlab.start_sshd(lab["layout"], "client")
    assert r.returncode == 1
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("client: ")]
    assert len(lines) == 1 and "the jump host could not reach it: Connection refused" in lines[0] and "via bastion" in lines[0]


def test_a_lost_bastion_fails_that_test_and_the_study_goes_on(lab, tmp_path):
    f = quick(f'ssh_config = "{lab["ssh_config"]}"\n[target.hosts.server]\n[target.hosts.client]', tmp_path, "t-bastion-cut")
    f.write_text(f.read_text().replace("duration = 1", "duration = 2").replace("runs = 1", "runs = 3"))
    # the bastion's sessions (every tunnel through it) are killed mid-test
    out, runs, cut = run_with_cut_sessions(lab["layout"], f, tmp_path / "r.db", "bastion")
    assert cut, "no bastion session was cut"
    assert out.status == "done" and [r["ok"] for r in runs] == [False, True, True]
    assert "connection lost during the test" in runs[0]["error"], runs[0]["error"]
    assert not [p for p in pids_in_namespace(lab["layout"].ns("client")) if Path(f"/proc/{p}/comm").read_text().strip() == "iperf3"]
