"""A lab with an sshd per host (`nettune lab up --ssh`) for SSH test modules, and sshd
variants started inside a further private mount namespace (sudo hidden or replaced).

The lab is removed with its own LabNet.down() and sshlab.down() (what `nettune lab down
NAME` does), never with a bare `nettune lab down`, which removes every lab on the machine.
"""
from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

from nettune.targets.ssh import sshlab
from nettune.targets.lab.labnet import LabLayout, LabNet, pids_in_namespace
from nettune.targets.procs import start_time

from conftest import nettune


def lab_text(name: str, hosts: list[str], subnet: str) -> str:
    return (f'name = "{name}"\n[target]\nkind = "lab"\nhosts = [{", ".join(repr(h) for h in hosts)}]\nsubnet = "{subnet}"\n'
            f'[workload]\nserver = "{hosts[0]}"\nclient = "{hosts[1]}"\n').replace("'", '"')


@contextmanager
def ssh_lab(d: Path, name: str, hosts: list[str], subnet: str) -> Iterator[dict]:
    """The lab up with an sshd per host and an inventory; removed (and checked empty) after."""
    (d / "lab.toml").write_text(lab_text(name, hosts, subnet))
    inv = d / "inventory.toml"
    layout = LabLayout(name, hosts, ipaddress.ip_network(subnet))
    try:
        r = nettune("lab", "up", str(d / "lab.toml"), "--ssh", "--inventory", str(inv), check=True)
        assert "inventory written" in r.stdout
        yield {"dir": d, "inventory": inv, "layout": layout, "name": name}
    finally:
        sshd = [sshlab.sshd_pid(name, h) for h in hosts]
        LabNet(layout).down()
        sshlab.down(name)
        assert all(p is None or start_time(p) is None or _zombie(p) for p in sshd), "an sshd survived the lab"
        assert not any(pids_in_namespace(layout.ns(h)) for h in hosts)


def lab_fixture(name: str, hosts: list[str], subnet: str) -> Any:
    """A module-scoped `lab` fixture: this lab up with its sshds for a whole test module."""

    @pytest.fixture(scope="module")
    def lab(tmp_path_factory: Any) -> Iterator[dict]:
        with ssh_lab(tmp_path_factory.mktemp(name), name, hosts, subnet) as lab:
            yield lab

    return lab


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: Any) -> Path:
    """(autouse where imported) A journal and a trust-on-first-use file of the test's own;
    returns the latter."""
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETTUNE_KNOWN_HOSTS", str(tmp_path / "tofu_known_hosts"))
    return tmp_path / "tofu_known_hosts"


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def netns_read(layout: LabLayout, host: str, path: str) -> str:
    """A file as the lab host sees it (e.g. its /proc/sys), read without nettune."""
    r = subprocess.run(["ip", "netns", "exec", layout.ns(host), "cat", path], capture_output=True, text=True, check=True)
    return " ".join(r.stdout.split())


def netns_write(layout: LabLayout, host: str, path: str, value: str) -> None:
    subprocess.run(["ip", "netns", "exec", layout.ns(host), "sh", "-c", 'printf "%s\\n" "$1" > "$2"', "sh", value, path], check=True)


def restart_sshd_with_mounts(layout: LabLayout, host: str, setup: str) -> int:
    """Restart a lab host's sshd inside a mount namespace of its own, after `setup` (Python
    run as root in that namespace) changed what is mounted there; sessions of that sshd see
    the change, nothing else on the machine does. Returns the new sshd's PID."""
    name = layout.study
    sshlab.stop_sshd(name, host)
    hd = sshlab.study_dir(name) / host
    sshd = sshlab.sshd_path()
    code = setup + f"\nimport os\nos.execv({sshd!r}, [{sshd!r}, '-f', {str(hd / 'sshd_config')!r}, '-E', {str(hd / 'sshd.log')!r}])\n"
    (hd / "sshd.pid").unlink(missing_ok=True)
    # unshare --mount: a new mount namespace, propagation private (nothing leaks out)
    subprocess.run(["ip", "netns", "exec", layout.ns(host), "unshare", "--mount", "--propagation", "private", sys.executable, "-c", code],
                   check=True, timeout=30)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        pid = sshlab.sshd_pid(name, host)
        if pid is not None and sshlab._listening_in(pid, 22):
            return pid
        time.sleep(0.02)
    raise AssertionError(f"sshd of {host} did not come back: {(hd / 'sshd.log').read_text()[-500:]}")


def restart_plain_sshd(layout: LabLayout, host: str) -> None:
    sshlab.stop_sshd(layout.study, host)
    sshlab.start_sshd(layout, host)


def cut_sessions_when_client_runs(layout: LabLayout, client: str, host: str, stop: threading.Event, cut: list[int]) -> None:
    """Once an iperf3 client runs in `client`'s namespace, kill the ssh sessions of `host`
    (its sshd's per-connection processes): a dropped connection in the middle of a test."""
    while not stop.is_set():
        for pid in pids_in_namespace(layout.ns(client)):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmd[0].endswith(b"iperf3") and b"-c" in cmd:
                time.sleep(0.3)
                for s in sshlab.session_pids(layout.study, host):
                    os.kill(s, 9)
                    cut.append(s)
                return
        time.sleep(0.02)


def kill_9_once_changed(f: Path, db: Path, changes: int, log: Path) -> None:
    """`nettune run f` as a user starts it, SIGKILLed once the journal shows `changes` values
    in force (op "actual"): settings left changed for `nettune restore`."""
    from nettune.knobs.journal import Journal

    with open(log, "w") as fh:
        p = subprocess.Popen([sys.executable, "-m", "nettune.cli", "run", str(f), "--db", str(db)], stdout=fh, stderr=fh, env=os.environ)
    try:
        end = time.monotonic() + 120
        while sum(r["op"] == "actual" for r in Journal().records()) < changes:
            assert p.poll() is None and time.monotonic() < end, log.read_text()
            time.sleep(0.02)
        os.kill(p.pid, 9)
        p.wait()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def run_with_cut_sessions(layout: LabLayout, f: Path, db: Path, cut_host: str) -> tuple[Any, list[dict], list[int]]:
    """Run study file `f`, killing `cut_host`'s ssh sessions once the client's iperf3 runs
    (the first test); returns (outcome, runs, PIDs cut)."""
    from nettune import load_study
    from nettune.run.study import run_study
    from nettune.store.writer import StoreWriter

    study = load_study(f)
    stop, cut = threading.Event(), []
    th = threading.Thread(target=cut_sessions_when_client_runs, args=(layout, "client", cut_host, stop, cut))
    th.start()
    try:
        with StoreWriter(db) as store:
            out = run_study(study, store, f.read_text(), str(f))
            runs = store.runs(out.study_id)
    finally:
        stop.set()
        th.join()
    return out, runs, cut
