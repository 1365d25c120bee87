"""A server that crashes mid-test (iperf 2.1.8's server segfaults now and then on a
--full-duplex connection after the warm-up's: 1 test in 150 on the lab with both cores
busy) is retried with a new server and said; when every server crashes, the error says
the server crashed, not "no receiver-side report". The crash is a real SIGSEGV delivered
to the real server process mid-test (the one fake: who sends it). Real iperf2/iperf3 on
loopback: run isolated (/work/isolated.sh)."""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import threading

import pytest

import nettune.run.driver as driver
import nettune.run.fanout_driver as fanout_driver
from nettune.engines import get_engine
from nettune.run.driver import run_test
from nettune.studyfile.models import Workload
from nettune.targets.local import LocalHost

from conftest import needs_iperf2, needs_iperf3


class CrashingHost(LocalHost):
    """Its first `crashes` server processes get SIGSEGV `after` seconds into their life
    (past iperf2's 0.2 s warm-up test: inside the measured one)."""

    def __init__(self, crashes: int, after: float = 0.8):
        super().__init__("server")
        self.crashes, self.after, self.timers = crashes, after, []

    def spawn(self, argv, **kw):
        proc = super().spawn(argv, **kw)
        if self.crashes > 0:
            self.crashes -= 1
            t = threading.Timer(self.after, lambda: proc.poll() is None and os.kill(proc.pid, signal.SIGSEGV))
            t.start()
            self.timers.append(t)
        return proc


def _run(engine: str, bidir: bool, crashes: int, processes: int = 1):
    """One 2 s test of `engine` on loopback whose first `crashes` servers crash."""
    e = get_engine(engine)
    p = subprocess.run(e.version_argv(), capture_output=True, text=True)
    server = CrashingHost(crashes)
    res = run_test(e, Workload(engine=engine, duration=2, bidir=bidir, auth=False, processes=processes, parallel=processes), server, LocalHost("client"), e.version(p.stdout + p.stderr))
    for t in server.timers:
        t.join()
    return res


@pytest.fixture(autouse=True)
def no_core_files():
    """A crashed server writes no core file into the working tree (children inherit it)."""
    before = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, before[1]))
    yield
    resource.setrlimit(resource.RLIMIT_CORE, before)


CASES = [pytest.param("iperf2", True, marks=needs_iperf2), pytest.param("iperf3", False, marks=needs_iperf3)]


@pytest.mark.parametrize("engine,bidir", CASES)
def test_a_server_that_crashes_mid_test_is_retried_and_said(engine, bidir):
    res = _run(engine, bidir, crashes=1)
    assert res.ok and res.receiver_bps, res.error
    said = [w for w in res.warnings if "crashed" in w]
    assert said == ["the server crashed (SIGSEGV), retried with a new server (attempt 2)"], res.warnings
    assert res.server.exit_code != -signal.SIGSEGV  # the record is the second server's


@pytest.mark.parametrize("engine,bidir", CASES)
def test_when_every_server_crashes_the_error_says_so(engine, bidir, monkeypatch):
    monkeypatch.setattr(driver, "BUSY_RETRIES", 2)
    res = _run(engine, bidir, crashes=2)
    assert not res.ok and res.error.startswith("the server crashed (SIGSEGV) during the test: "), res.error
    assert res.server.exit_code == -signal.SIGSEGV


@needs_iperf3
def test_fanned_out_every_server_crashing_is_said_per_process(monkeypatch):
    """iperf3 fanned out over 2 processes: a crashed server of either is retried the same way,
    and when every attempt crashes each process's error says its server crashed."""
    monkeypatch.setattr(fanout_driver, "BUSY_RETRIES", 2)
    res = _run("iperf3", False, crashes=4, processes=2)
    assert not res.ok and res.error.count("the server crashed (SIGSEGV) during the test") == 2, res.error
    assert any("the server crashed (SIGSEGV) (one of 2 processes), retried" in w for w in res.warnings), res.warnings
