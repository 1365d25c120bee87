"""SSH trust on the lab's real sshd: sudo that is missing or wants a password, pinned host
keys against trust-on-first-use, private key file modes, the known_hosts file named in
every message, a malformed key, and no CPU figure for a test whose connection dropped.

sudo is hidden or replaced only for one lab host's sshd, which the test restarts inside a
further private mount namespace (sshlab_util.restart_sshd_with_mounts) with a tmpfs over
/usr/bin holding a symlink to every real entry but sudo: "not installed" as it is; "asks
for a password" with /usr/bin/sudo a script that prints exactly what the real
`sudo -n true` prints for a user without NOPASSWD (captured from this machine's sudo as
user nobody). Nothing outside that sshd's sessions sees either.
"""
import shlex
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from nettune.errors import NettuneError
from nettune.report.table import columns
from nettune.run.study import run_study
from nettune import load_study, parse_study
from nettune.store.writer import StoreWriter
from nettune.targets.ssh import sshlab
from nettune.targets.ssh.ssh import SshTarget

from conftest import needs_iperf3, needs_root, nettune
from sshlab_util import cut_sessions_when_client_runs, lab_fixture, private_state, restart_plain_sshd, restart_sshd_with_mounts  # noqa: F401 - private_state: autouse fixture

pytestmark = [needs_root, needs_iperf3]

LAB = "h4-trust"
HOSTS = ["a", "b"]
SUBNET = "198.19.214.0/24"
A, B = "198.19.214.10", "198.19.214.11"
# What `sudo -n true` printed here (sudo 1.9.13p3) for a user without NOPASSWD; used only
# if this machine has no sudo to ask (the test then still runs with the recorded text).
RECORDED_SUDO_REFUSAL = (1, "sudo: a password is required\n")


lab = lab_fixture(LAB, HOSTS, SUBNET)


def study(inv: Path, extra: str = "", workload: str = 'server = "a"\nclient = "b"\nduration = 1', name: str = "h4-trust-study") -> str:
    return f'name = "{name}"\n[target]\nkind = "ssh"\ninventory = "{inv}"\nreconnect_timeout = 5\n{extra}\n[workload]\n{workload}\n'


def connect_error(text: str) -> str:
    with pytest.raises(NettuneError) as e:
        SshTarget(parse_study(text)).close()
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def real_sudo_refusal() -> tuple[int, str]:
    """(exit code, stderr) of the real `sudo -n true` run as nobody (no sudoers entry)."""
    if shutil.which("sudo") is None:
        return RECORDED_SUDO_REFUSAL
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sudo", "-n", "true"],
                       capture_output=True, text=True, cwd="/", timeout=30)
    assert r.returncode != 0 and r.stderr.strip(), r
    return r.returncode, r.stderr


# Run as root inside the restarted sshd's own mount namespace: a tmpfs over /usr/bin with
# a symlink to every real entry but sudo; `standin`, if given, becomes /usr/bin/sudo.
SUDO_MOUNTS = """
import os, subprocess
orig, standin = {orig!r}, {standin!r}
subprocess.run(["mount", "--bind", "/usr/bin", orig], check=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", "/usr/bin"], check=True)
for n in os.listdir(orig):
    if n != "sudo":
        os.symlink(os.path.join(orig, n), os.path.join("/usr/bin", n))
if standin:
    os.symlink(standin, "/usr/bin/sudo")
"""


def sudo_mounts(tmp_path: Path, standin: Path | None = None) -> str:
    orig = tmp_path / "usr-bin"
    orig.mkdir()
    return SUDO_MOUNTS.format(orig=str(orig), standin=str(standin) if standin else "")


def test_sudo_not_installed_is_said_with_the_fix(lab, tmp_path):
    restart_sshd_with_mounts(lab["layout"], "b", sudo_mounts(tmp_path))
    try:
        msg = connect_error(study(lab["inventory"], "[target.hosts.b]\nsudo = true"))
        print(msg)  # shown with -s: the exact message, for the docs
        assert msg.startswith(f"b (root@{B}:22): sudo = true but sudo is not installed there")
        assert "install sudo" in msg and msg.endswith("or set sudo = false (root needs no sudo)")
        # the same through `nettune run`: one line, the real cause, never "iperf3 is not installed"
        f = tmp_path / "s.toml"
        f.write_text(study(lab["inventory"], "[target.hosts.b]\nsudo = true"))
        r = nettune("run", str(f), "--db", str(tmp_path / "r.db"))
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("error: ")
        assert "sudo is not installed" in r.stderr and "iperf3" not in r.stderr
        # without sudo = true the same host is fine: only sudo was hidden
        t = SshTarget(parse_study(study(lab["inventory"])))
        try:
            assert t.hosts["b"].which("iperf3") and t.hosts["b"].which("sudo") is None
        finally:
            t.close()
    finally:
        restart_plain_sshd(lab["layout"], "b")
    assert Path("/usr/bin/sudo").exists() or shutil.which("sudo") is None  # nothing leaked out


def test_sudo_asking_for_a_password_is_said_with_the_fix(lab, tmp_path):
    rc, said = real_sudo_refusal()
    standin = tmp_path / "sudo"
    standin.write_text(f"#!/bin/sh\nprintf '%s' {shlex.quote(said)} >&2\nexit {rc}\n")
    standin.chmod(0o755)
    restart_sshd_with_mounts(lab["layout"], "b", sudo_mounts(tmp_path, standin))
    try:
        msg = connect_error(study(lab["inventory"], "[target.hosts.b]\nsudo = true"))
        print(repr(said), msg)  # shown with -s: what sudo said, and the message
        assert msg.startswith(f"b (root@{B}:22): sudo = true but sudo asks root for a password")
        assert " ".join(said.split()) in msg
        assert "root ALL=(ALL) NOPASSWD: ALL" in msg and msg.endswith("or set sudo = false (root needs no sudo)")
    finally:
        restart_plain_sshd(lab["layout"], "b")
    if shutil.which("sudo") is None:
        return  # nothing real to go back to (scripts/env.sh installs sudo)
    t = SshTarget(parse_study(study(lab["inventory"], "[target.hosts.b]\nsudo = true")))  # the real sudo again
    try:
        assert t.hosts["b"].run(["id", "-u"]).stdout.strip() == "0"
    finally:
        t.close()


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return " ".join(path.with_suffix(".pub").read_text().split()[:2])


def _fingerprint(pub: str) -> str:
    import asyncssh

    return asyncssh.import_public_key(pub).get_fingerprint()


def test_pinned_key_always_wins_over_trust_on_first_use(lab, tmp_path, private_state):
    real = next(ln for ln in (sshlab.study_dir(LAB) / "known_hosts").read_text().splitlines() if ln.startswith(A + " ")).split(" ", 1)[1]
    wrong = _keygen(tmp_path / "other")
    pinned = tmp_path / "pinned_kh"

    def text(tofu: bool) -> str:
        return study(lab["inventory"], f'trust_on_first_use = {str(tofu).lower()}\n[target.hosts.a]\nknown_hosts = "{pinned}"')

    # the bug: a real key in the first-use file made a wrong pinned key pass, silently
    pinned.write_text(f"{A} {wrong}\n")
    private_state.write_text(f"{A} {real}\n")
    for tofu in (False, True):
        msg = connect_error(text(tofu))
        assert "host key conflict" in msg and str(pinned) in msg and str(private_state) in msg
        assert _fingerprint(wrong) in msg and _fingerprint(real) in msg
    # the other way round: the pinned key is right, the first-use file is not
    pinned.write_text(f"{A} {real}\n")
    private_state.write_text(f"{A} {wrong}\n")
    msg = connect_error(text(False))
    assert "host key conflict" in msg and _fingerprint(wrong) in msg and _fingerprint(real) in msg
    # agreeing files: connects
    private_state.write_text(f"{A} {real}\n")
    SshTarget(parse_study(text(False))).close()
    # a wrong pinned key alone: refused, naming the pinned file and what the host presents
    private_state.unlink()
    pinned.write_text(f"{A} {wrong}\n")
    msg = connect_error(text(True))
    assert "does NOT match the one in " + str(pinned) in msg and f"it presents {_fingerprint(real)}" in msg
    assert not private_state.exists()  # never recorded over a pinned key


def test_private_key_readable_by_others_is_refused(lab, tmp_path):
    key = tmp_path / "id_ed25519"
    shutil.copyfile(sshlab.study_dir(LAB) / "id_ed25519", key)
    text = study(lab["inventory"], f'[target.hosts.a]\nkey = "{key}"')
    for mode in (0o644, 0o640, 0o604):
        key.chmod(mode)
        msg = connect_error(text)
        assert msg.startswith(f"a (root@{A}:22): key file {key} is accessible by group or others (mode {mode:04o})")
        assert f"chmod 600 {key}" in msg
    key.chmod(0o600)
    SshTarget(parse_study(text)).close()  # the same key, private: accepted


def test_malformed_or_missing_key_file_names_host_and_path(lab, tmp_path):
    key = tmp_path / "broken_key"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n")
    key.chmod(0o600)
    msg = connect_error(study(lab["inventory"], f'[target.hosts.b]\nkey = "{key}"'))
    assert msg.startswith(f"b (root@{B}:22): key file {key} cannot be used: ")
    msg = connect_error(study(lab["inventory"], f'[target.hosts.b]\nkey = "{tmp_path / "nope"}"'))
    assert f"b (root@{B}:22): key file {tmp_path / 'nope'} does not exist" in msg


def test_messages_name_the_known_hosts_file_in_use(lab, tmp_path, monkeypatch):
    empty = tmp_path / "lab_known_hosts"
    empty.write_text("")
    msg = connect_error(study(lab["inventory"], f'[target.hosts.a]\nknown_hosts = "{empty}"'))
    assert f"host key unknown (not in {empty})" in msg and f"ssh-keyscan -p 22 {A} >> {empty}" in msg
    assert "~/.ssh" not in msg
    missing = tmp_path / "no_such_known_hosts"
    msg = connect_error(study(lab["inventory"], f'[target.hosts.a]\nknown_hosts = "{missing}"'))
    assert f"known_hosts file {missing} does not exist" in msg and "not in" not in msg
    # no known_hosts of its own: ~/.ssh/known_hosts, named as the real path
    inv = tmp_path / "inv.toml"
    inv.write_text(lab["inventory"].read_text().replace("known_hosts = ", "# known_hosts = "))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    msg = connect_error(study(inv))
    home_kh = tmp_path / "home" / ".ssh" / "known_hosts"
    assert f"not in {home_kh}, which does not exist yet" in msg and f">> {home_kh}" in msg


@pytest.mark.parametrize("side", ["b", "a"])  # b runs the client, a the server
def test_dropped_connection_stores_no_cpu_figure(lab, tmp_path, side):
    f = tmp_path / "cut.toml"
    f.write_text(study(lab["inventory"], workload='server = "a"\nclient = "b"\nduration = 2', name=f"h4-cut-{side}") + "[repeat]\nruns = 2\n")
    s = load_study(f)
    stop, cut = threading.Event(), []
    th = threading.Thread(target=cut_sessions_when_client_runs, args=(lab["layout"], "b", side, stop, cut))
    th.start()
    try:
        with StoreWriter(tmp_path / "r.db") as store:
            out = run_study(s, store, f.read_text(), str(f))
            runs = store.runs(out.study_id)
    finally:
        stop.set()
        th.join()
    assert cut and [r["ok"] for r in runs] == [False, True], [r["error"] for r in runs]
    lost, ok = runs
    column = "cpu_client" if side == "b" else "cpu_server"
    assert "connection lost" in lost["error"] and lost[column] is None  # unknown, not 0.0
    assert ok["cpu_client"] > 0 and ok["cpu_server"] > 0
    head, rows = columns(runs)
    cell = head.index("client CPU (% of 1 core)" if side == "b" else "server CPU (% of 1 core)")  # headers name their unit (issue 12)
    assert rows[0][cell] == "" and rows[1][cell] != ""
