"""A port nettune picked itself, taken before its server bound it (on a busy machine any
connection may take an ephemeral port): the test runs again on a new port and says so; a
port the study fixed fails with the tool's own reason and, with fan-out, the process and
port that failed (seen: "server of process 1 exited before listening iperf3: exiting" for
iperf3's "Address already in use", and always "process 1"). Real iperf3 on loopback: run
isolated (/work/isolated.sh)."""
from __future__ import annotations

import socket

import pytest

from nettune.engines import get_engine
from nettune.run.driver import run_test
from nettune.studyfile.models import Workload
from nettune.targets.local import LocalHost

from conftest import needs_iperf3


class RacedHost(LocalHost):
    """Hands out `first` as its free port once, then real free ones."""

    def __init__(self, first: int):
        super().__init__("server")
        self.first, self.given = first, []

    def free_port(self) -> int:
        port = self.first if not self.given else super().free_port()
        self.given.append(port)
        return port


@pytest.fixture
def held():
    """(H, socket bound to H+1, not listening): H free, H+1 taken though nothing listens on it."""
    for _ in range(50):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1] - 1
        try:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        yield port, s
        s.close()
        return
    pytest.skip("no free port below a free one")


def _version():
    import subprocess

    return get_engine("iperf3").version(subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout)


@needs_iperf3
@pytest.mark.parametrize("processes", [1, 2])
def test_a_picked_port_taken_before_the_server_bound_it_is_replaced(held, processes):
    first, _ = held
    taken = first + 1 if processes == 1 else first  # one process: its own port; two: the second's
    server = RacedHost(taken if processes == 1 else first)
    wl = Workload(engine="iperf3", parallel=2, processes=processes, duration=1, auth=False)
    res = run_test(get_engine("iperf3"), wl, server, LocalHost("client"), _version())
    assert res.ok and res.total_bps, res.error
    said = [w for w in res.warnings if "retried on" in w]
    assert len(said) == 1 and "Address already in use" in said[0], res.warnings
    assert len(server.given) == 2 and server.given[1] not in (first, first + 1)


@needs_iperf3
@pytest.mark.parametrize("processes", [1, 2])
def test_a_fixed_port_in_use_fails_with_the_tools_reason_and_the_process_that_failed(held, processes):
    first, _ = held
    port = first + 1 if processes == 1 else first
    wl = Workload(engine="iperf3", parallel=2, processes=processes, duration=1, auth=False, port=port)
    res = run_test(get_engine("iperf3"), wl, LocalHost("server"), LocalHost("client"), _version())
    assert not res.ok and "Address already in use" in (res.error or "") and "iperf3: exiting" not in (res.error or "")
    if processes == 2:
        assert (res.error or "").startswith(f"server of process 2 of 2 (port {first + 1}) exited before listening: ")
    assert not any("retried" in w for w in res.warnings)  # the study's port is the study's to change


@needs_iperf3
def test_fan_out_ports_after_a_picked_one_that_are_in_use_are_picked_again(held):
    # the picked port was free, the next one (the second process's) had a listener: nettune's own
    # pick, so it picks again rather than telling the user to set [workload] port
    first, bound = held
    bound.listen()
    server = RacedHost(first)
    wl = Workload(engine="iperf3", parallel=2, processes=2, duration=1, auth=False)
    res = run_test(get_engine("iperf3"), wl, server, LocalHost("client"), _version())
    assert res.ok and res.total_bps, res.error
    assert len(server.given) == 2 and server.given[1] not in (first, first + 1)
