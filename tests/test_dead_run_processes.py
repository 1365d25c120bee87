"""A dead run leaves no process (issue 28 item 8): `nettune restore`, `nettune lab down`
and the next `nettune run` stop every process a killed run started, found by the owner
mark each carries in its environment (NETTUNE_OWNER), also when the run died before it
recorded the PID. The kill -9 loop under CPU load is tests/test_fault_injection.py."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from nettune import parse_study
from nettune.targets.procs import OWNER_ENV, start_time, started_by

from conftest import needs_root, nettune


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))


def orphan(tmp_path) -> tuple[subprocess.Popen, str]:
    """A process as a killed run leaves it: its owner mark names a nettune that is gone,
    and no record of its PID exists (killed between starting it and recording it)."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    token = f"{gone.pid} {start_time(gone.pid) or '1'}"
    gone.wait()
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env={**os.environ, OWNER_ENV: token},
                         start_new_session=True)
    deadline = time.monotonic() + 10
    while p.pid not in started_by({token}) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started_by({token}) == [p.pid]
    return p, token


def gone(p: subprocess.Popen) -> bool:
    try:
        p.wait(timeout=10)
        return True
    except subprocess.TimeoutExpired:
        return False


@pytest.mark.parametrize("how", ["nettune restore", "the next nettune run"])
def test_a_killed_runs_unrecorded_process_is_stopped(tmp_path, how):
    p, token = orphan(tmp_path)
    try:
        if how == "nettune restore":
            r = nettune("restore")
            assert r.returncode == 0 and f"pid {p.pid}" in r.stdout, r.stdout + r.stderr
        else:
            from nettune.run.resume import clear_dead_run

            notes = clear_dead_run(parse_study('name = "dead-run"\n[target]\nkind = "local"\n'), set())
            assert any(str(p.pid) in n for n in notes), notes
        assert gone(p)
        assert started_by({token}) == []
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_a_process_of_a_live_run_is_left_alone(tmp_path):
    me = f"{os.getpid()} {start_time(os.getpid())}"  # this test process: a nettune that is alive
    p = subprocess.Popen(["sleep", "60"], env={**os.environ, OWNER_ENV: me})
    try:
        r = nettune("restore")
        assert r.returncode == 0 and p.poll() is None, r.stdout
    finally:
        p.kill()
        p.wait()


def test_what_lab_up_left_running_on_purpose_is_left_to_lab_down(tmp_path, monkeypatch):
    """`nettune lab up --ssh` leaves sshds running for the user after it exits: a restore or
    the next run must not take them for a killed run's (only `nettune lab down` stops them)."""
    from nettune.targets import procs

    monkeypatch.setattr(procs, "PROC_DIR", tmp_path / "run" / "procs")
    p = subprocess.Popen(["sleep", "60"])
    try:
        procs.record_pid(p.pid, procs.lab_owner("tk-lab-up"))
        assert procs.stop_dead_runs() == [] and p.poll() is None
        assert procs.stop_dead_runs(labs=True) == [p.pid] and gone(p)
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()


def _children(pid: int) -> list[int]:
    return [int(c) for t in os.listdir(f"/proc/{pid}/task") for c in open(f"/proc/{pid}/task/{t}/children").read().split()]


@needs_root
def test_a_nettune_in_another_pid_namespace_is_left_alone(tmp_path):
    """A nettune in a container (here: unshare --pid) marks its processes with a PID of its
    own namespace. Seen from the host that PID is another process, so the owner looked dead
    and a restore or the next run on the host killed the container's iperf3 mid-test ("the
    server has terminated"). A mark from another PID namespace cannot be judged: left alone."""
    from nettune.targets.procs import owner_alive, stop_dead_runs

    # PID 1 of the new namespace marks itself: its owner (itself) is alive there
    ns = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c",
                           f'{OWNER_ENV}="1 $(cut -d" " -f22 /proc/1/stat)" exec sleep 120'], start_new_session=True)
    try:
        deadline, marked = time.monotonic() + 10, None
        while marked is None and time.monotonic() < deadline:
            for pid in _children(ns.pid):
                env = dict(e.split("=", 1) for e in open(f"/proc/{pid}/environ").read().split("\0") if "=" in e)
                if OWNER_ENV in env:
                    marked, token = pid, env[OWNER_ENV]
            time.sleep(0.05)
        assert marked is not None and token.startswith("1 ")
        assert not owner_alive(token)  # from here the token names our PID 1: it looks dead
        assert stop_dead_runs(owners={token}) == []
        assert ns.poll() is None and start_time(marked) is not None
    finally:
        os.killpg(ns.pid, 9)
        ns.wait()
