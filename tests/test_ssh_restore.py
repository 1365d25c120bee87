"""`nettune restore` over SSH, on the lab's real sshds: a knob sweep over SSH is killed
with SIGKILL while its values are in force, then restore reconnects (one connection per
host, only to the host key the run saw) and puts every value back; an unreachable host
stays pending and is named; a host with another host key is refused; pending changes
block only studies that use their host (and `--restore-first` restores them over SSH);
`--forget HOST`; `nettune lab down NAME` restores first and says what it gives up.

Values are read back with `ip netns exec`, never through nettune. The sysctls used
(net.ipv4.tcp_rmem, net.core.somaxconn) are per network namespace: nothing of this
machine changes. The last test removes this module's lab with `nettune lab down NAME`.
"""
import os
import subprocess
from pathlib import Path


from nettune.knobs.journal import Journal
from nettune.targets.ssh import sshlab

from conftest import needs_iperf3, needs_root, nettune
from sshlab_util import kill_9_once_changed, lab_fixture, netns_read, private_state, restart_plain_sshd  # noqa: F401 - private_state: autouse fixture

pytestmark = [needs_root, needs_iperf3]

LAB = "h4-restore"
HOSTS = ["server", "client", "other"]
SUBNET = "198.19.215.0/24"
ADDR = {"server": "198.19.215.10", "client": "198.19.215.11", "other": "198.19.215.12"}
RMEM, SOMAXCONN = "/proc/sys/net/ipv4/tcp_rmem", "/proc/sys/net/core/somaxconn"
SWEEP = """
name = "h4-sweep"
[target]
kind = "ssh"
inventory = "{inv}"
reconnect_timeout = 5
[target.hosts.client]
sudo = true
[workload]
server = "server"
client = "client"
duration = 3
[sweep]
rmem = [3000000, 5000000]
[knobs]
"sysctl:net.ipv4.tcp_rmem" = "4096 131072 {{rmem}}"
"sysctl:net.core.somaxconn" = 1000
[knobs.hosts]
"sysctl:net.core.somaxconn" = ["server", "client"]
"""
IN_FORCE = 5  # the first point: tcp_rmem on three hosts, somaxconn on two


lab = lab_fixture(LAB, HOSTS, SUBNET)


def values(lab) -> dict[tuple[str, str], str]:
    return {(h, p): netns_read(lab["layout"], h, p) for h in HOSTS for p in (RMEM, SOMAXCONN)}


def logins(host: str) -> int:
    """Logins the host's sshd accepted so far (its log, LogLevel VERBOSE)."""
    return (sshlab.study_dir(LAB) / host / "sshd.log").read_text().count("Accepted publickey")


def killed_sweep(lab, tmp_path: Path) -> dict[tuple[str, str], str]:
    """Run the sweep as `nettune run` and SIGKILL it while its first point's values are in
    force (watching the journal); returns the values from before."""
    before = values(lab)
    f = tmp_path / "sweep.toml"
    f.write_text(SWEEP.format(inv=lab["inventory"]))
    kill_9_once_changed(f, tmp_path / "r.db", IN_FORCE, tmp_path / "run.out")
    now = values(lab)
    assert all(now[(h, RMEM)].endswith(" 3000000") for h in HOSTS)
    assert now[("server", SOMAXCONN)] == now[("client", SOMAXCONN)] == "1000" and now[("other", SOMAXCONN)] == before[("other", SOMAXCONN)]
    return before


def pending_changes() -> list[dict]:
    return [c for s in Journal().open_sessions() for c in s.changes]


def test_kill_9_mid_sweep_then_restore_puts_every_value_back(lab, tmp_path):
    before = killed_sweep(lab, tmp_path)
    changes = pending_changes()
    assert len(changes) == IN_FORCE
    reach = {c.host: c.place["reach"] for c in changes}
    assert set(reach) == set(HOSTS)
    inv_kh = str(sshlab.study_dir(LAB) / "known_hosts")
    for h, r in reach.items():
        assert (r["address"], r["port"], r["user"], r["known_hosts"]) == (ADDR[h], 22, "root", inv_kh)
        assert r["key"] == str(sshlab.study_dir(LAB) / "id_ed25519") and r["connect_timeout"] == 10.0
        assert r["host_key"].startswith("ssh-ed25519 ") and r["host_key"] in Path(inv_kh).read_text()
        assert r["sudo"] is (h == "client")
    seen = {h: logins(h) for h in HOSTS}
    r = nettune("restore")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("restored: ") == IN_FORCE and "3000000 -> " in r.stdout
    assert values(lab) == before
    assert {h: logins(h) - seen[h] for h in HOSTS} == {h: 1 for h in HOSTS}  # one connection per host
    assert Journal().open_sessions() == []
    assert "nothing to restore" in nettune("restore", check=True).stdout


def _run(tmp_path: Path, name: str, text: str, *args: str) -> subprocess.CompletedProcess:
    f = tmp_path / f"{name}.toml"
    f.write_text(text)
    return nettune("run", str(f), "--db", str(tmp_path / "gate.db"), *args)


def test_unreachable_host_stays_pending_blocks_only_its_studies_and_can_be_forgotten(lab, tmp_path):
    before = killed_sweep(lab, tmp_path)
    layout = lab["layout"]
    sshlab.stop_sshd(LAB, "server")
    try:
        r = nettune("restore")
        assert r.returncode == 1
        assert f"unreachable: server ({ADDR['server']}): server (root@{ADDR['server']}:22): cannot connect" in r.stdout
        assert "nettune restore --forget [HOST]" in r.stderr
        now = values(lab)
        assert all(now[(h, p)] == before[(h, p)] for h in ("client", "other") for p in (RMEM, SOMAXCONN))
        assert now[("server", SOMAXCONN)] == "1000"  # still changed: never marked restored
        assert {c.host for c in pending_changes()} == {"server"}

        # a study on this machine runs, and says what is pending elsewhere
        note = f"an interrupted run left settings changed on server ({ADDR['server']}); this study does not use them"
        r = _run(tmp_path, "local", 'name = "h4-gate-local"\n[target]\nkind = "local"\n[workload]\nduration = 1\n')
        assert r.returncode == 0 and note in " ".join(r.stdout.split()), r.stdout + r.stderr
        # an ssh study on the other hosts runs too
        inv = lab["inventory"].read_text()
        others = inv[inv.index("[hosts.client]"):].replace("[hosts.", "[target.hosts.")
        r = _run(tmp_path, "others", f'name = "h4-gate-others"\n[target]\nkind = "ssh"\n{others}\n[workload]\nserver = "other"\nclient = "client"\nduration = 1\n')
        assert r.returncode == 0 and note in " ".join(r.stdout.split()), r.stdout + r.stderr
        # a study that uses server is refused, naming it, before connecting anywhere
        r = _run(tmp_path, "server", f'name = "h4-gate-server"\n[target]\nkind = "ssh"\ninventory = "{lab["inventory"]}"\n[workload]\nserver = "server"\nclient = "client"\nduration = 1\n')
        assert r.returncode == 2 and r.stderr.startswith("error: an earlier run was interrupted and left settings changed on server (198.19.215.10), which this study uses")
        assert "nettune restore" in r.stderr and "cannot connect" not in r.stderr

        # --forget HOST: the commands first, then only that host's entries are dropped
        r = nettune("restore", "--forget", "server")
        assert r.returncode == 0, r.stdout + r.stderr
        commands = [ln.split(": ", 1)[1] for ln in r.stdout.splitlines() if ln.startswith(f"  on server ({ADDR['server']}): ")]
        assert commands == ["sysctl -w net.core.somaxconn=" + before[("server", SOMAXCONN)],
                            "sysctl -w 'net.ipv4.tcp_rmem=" + before[("server", RMEM)] + "'"]
        assert "forgotten" in r.stdout and pending_changes() == [] and Journal().open_sessions() == []
        for cmd in commands:  # what the user does by hand: the printed commands are right
            subprocess.run(["ip", "netns", "exec", layout.ns("server"), "sh", "-c", cmd], check=True, capture_output=True)
        assert values(lab) == before
    finally:
        restart_plain_sshd(layout, "server")


def _sshd_with_another_host_key(lab, tmp_path: Path) -> None:
    """The server answers at the same address with a different host key (reinstalled,
    or another machine): its own sshd_config, same PidFile, a new key."""
    layout, hd = lab["layout"], sshlab.study_dir(LAB) / "server"
    sshlab.stop_sshd(LAB, "server")
    key = tmp_path / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    sshd = sshlab.sshd_path()
    cfg = tmp_path / "sshd_config"
    cfg.write_text(sshlab.sshd_config(ADDR["server"], 22, key, sshlab.study_dir(LAB) / "authorized_keys", hd / "sshd.pid", sshlab.sshd_version(sshd)))
    sshlab._start(sshd, layout.ns("server"), cfg, hd / "sshd.log", hd / "sshd.pid", 22)


def test_restore_refuses_a_host_whose_key_changed(lab, tmp_path):
    import asyncssh

    before = killed_sweep(lab, tmp_path)
    recorded = next(c.place["reach"]["host_key"] for c in pending_changes() if c.host == "server")
    _sshd_with_another_host_key(lab, tmp_path)
    try:
        r = nettune("restore", "server")  # only that host
        assert r.returncode == 1
        fp_then = asyncssh.import_public_key(recorded).get_fingerprint()
        fp_now = asyncssh.import_public_key((tmp_path / "other_host_key.pub").read_text()).get_fingerprint()
        text = " ".join(r.stdout.split())
        assert f"host key is not the {fp_then} seen when nettune changed its settings; it presents {fp_now}" in text
        assert values(lab)[("server", SOMAXCONN)] == "1000"
        assert {c.host for c in pending_changes()} == set(HOSTS)  # `restore server` left the others alone
    finally:
        restart_plain_sshd(lab["layout"], "server")
    # the right host is back: a study using it puts everything back first (--restore-first)
    r = _run(tmp_path, "first", f'name = "h4-first"\n[target]\nkind = "ssh"\ninventory = "{lab["inventory"]}"\n'
             '[workload]\nserver = "server"\nclient = "other"\nduration = 1\n', "--restore-first")
    assert r.returncode == 0, r.stdout + r.stderr
    assert " ".join(r.stdout.split()).count("restore-first: restored: ") == IN_FORCE
    assert values(lab) == before and Journal().open_sessions() == []


def test_restore_host_that_has_nothing_pending_is_an_error(lab, tmp_path):
    r = nettune("restore", "nosuchhost")
    assert r.returncode == 2 and "no pending change on 'nosuchhost'; nothing is pending" in r.stderr


def test_lab_down_restores_lab_hosts_first_and_says_what_it_gives_up(lab, tmp_path):
    """Last in this module: it removes the module's lab, as `nettune lab down NAME`."""
    before = killed_sweep(lab, tmp_path)
    sshlab.stop_sshd(LAB, "other")  # one host can no longer be reached
    r = nettune("lab", "down", LAB)
    assert r.returncode == 0, r.stdout + r.stderr
    out = " ".join(r.stdout.split())
    for h in ("server", "client"):
        assert f"before removing the lab: restored: {h}: sysctl:net.ipv4.tcp_rmem: 4096 131072 3000000 -> {before[(h, RMEM)]}" in out
    assert f"before removing the lab: restored: server: sysctl:net.core.somaxconn: 1000 -> {before[('server', SOMAXCONN)]}" in out
    assert f"on other ({ADDR['other']}): sysctl -w 'net.ipv4.tcp_rmem={before[('other', RMEM)]}'" in out
    assert out.index("given up") < out.index("removed labs: h4-restore")
    done = {r["seq"]: r for r in Journal().records() if r["op"] == "done"}
    given_up = [d for d in done.values() if d["result"] == "forgotten"]
    assert len(given_up) == 1 and "nettune lab down" in given_up[0]["detail"]
    assert Journal().open_sessions() == []
    assert not [n for n in os.listdir("/run/netns") if n.startswith(f"nettune-{LAB}-")]
    assert not sshlab.study_dir(LAB).exists()
