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

from conftest import nettune


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


def test_a_marked_process_of_another_pid_namespace_is_never_stopped_from_here(tmp_path):
    """An owner token names a PID of the run's own PID namespace: a run in private
    namespaces (an isolated test run or bench) cannot be judged dead from outside it, so
    a run here never stops its processes (one on the host stopped every server of a bench
    running isolated)."""
    from nettune.targets.procs import marked_processes, stop_dead_runs

    if os.geteuid() != 0:
        pytest.skip("unshare --pid needs root")
    token = "2 1"  # PID 2 of that namespace: no such owner here
    outer = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", "import time; time.sleep(120)"],
                             env={**os.environ, OWNER_ENV: token}, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        inner: list[int] = []
        while not inner and time.monotonic() < deadline:
            inner = [int(c) for c in open(f"/proc/{outer.pid}/task/{outer.pid}/children").read().split()]
            time.sleep(0.05)
        assert inner, "the namespaced process did not start"
        assert inner[0] not in marked_processes()
        assert inner[0] not in stop_dead_runs()
        assert os.path.exists(f"/proc/{inner[0]}")
    finally:
        os.killpg(outer.pid, 9)
        outer.wait()
