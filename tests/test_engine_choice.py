"""engine = "auto" and processes = "auto": each branch of engines/choice.py, on versions
read by the engines' own parsers from recorded `--version` outputs (tests/fixtures/versions,
SOURCES.md says where each comes from), and the fan-out arithmetic."""
from pathlib import Path

import pytest

from conftest import needs_iperf3, nettune

from nettune.engines import get_engine
from nettune.engines.choice import auto_processes, choose, threaded
from nettune.engines.fanout import combine, split_streams
from nettune.engines.result import Interval, StreamResult
from nettune.engines.result import TestResult as Result  # not "Test*": pytest would collect it
from nettune.studyfile.models import Workload

VERSIONS = Path(__file__).parent / "fixtures" / "versions"


def version(engine: str, file: str) -> str:
    return get_engine(engine).version((VERSIONS / file).read_text())


V312, V319, V218 = version("iperf3", "iperf3-3.12.txt"), version("iperf3", "iperf3-3.19.txt"), version("iperf2", "iperf-2.1.8.txt")


def test_recorded_versions_parse():
    assert (V312, V319, V218) == ("3.12", "3.19", "2.1.8")
    assert not threaded(V312) and threaded(V319)


def test_threaded_iperf3_runs_one_process():
    c = choose(8, {"iperf3": V319, "iperf2": V218}, cores=16)
    assert (c.engine, c.processes) == ("iperf3", 1) and "own thread" in c.reason and c.label == "iperf3 3.19"


def test_threaded_iperf3_past_128_streams_fans_out_for_the_cap():
    c = choose(300, {"iperf3": V319}, cores=16)
    assert (c.engine, c.processes) == ("iperf3", 3) and "128" in c.reason


def test_old_iperf3_at_several_streams_on_several_cores_gives_way_to_iperf2():
    c = choose(8, {"iperf3": V312, "iperf2": V218}, cores=4)
    assert (c.engine, c.processes) == ("iperf2", 1) and "one thread" in c.reason and "thread per stream" in c.reason
    # the lab and loopback: the client may use half of a 2-core machine, yet one iperf3
    # process would leave a core idle (issue 30: auto kept iperf3 3.12 at every -P)
    c = choose(4, {"iperf3": V312, "iperf2": V218}, cores=1, machine_cores=2)
    assert (c.engine, c.processes) == ("iperf2", 1) and "2 cores" in c.reason


def test_old_iperf3_without_iperf2_fans_out_one_process_per_core_at_most_one_per_stream():
    c = choose(8, {"iperf3": V312}, cores=4)
    assert (c.engine, c.processes) == ("iperf3", 4) and "one thread" in c.reason and c.label == "iperf3 3.12 x4 processes"
    assert choose(3, {"iperf3": V312}, cores=16).processes == 3
    assert choose(4, {"iperf3": V312}, cores=1, machine_cores=2).processes == 2  # never one process on a machine of two


def test_old_iperf3_single_stream_or_single_core_stays_one_process():
    assert (choose(1, {"iperf3": V312, "iperf2": V218}, cores=16).processes, "one stream") == (1, "one stream")
    c = choose(8, {"iperf3": V312, "iperf2": V218}, cores=1)
    assert (c.engine, c.processes) == ("iperf3", 1) and "one core" in c.reason


def test_a_process_count_the_study_fixed_is_used_for_old_iperf3():
    c = choose(8, {"iperf3": V312, "iperf2": V218}, cores=4, processes=3)
    assert (c.engine, c.processes) == ("iperf3", 3) and "as the study set" in c.reason


def test_without_iperf3_iperf2():
    c = choose(8, {"iperf2": V218}, cores=4)
    assert (c.engine, c.processes) == ("iperf2", 1) and "not installed" in c.reason


def test_neither_tool_is_an_error():
    with pytest.raises(ValueError, match="neither"):
        choose(1, {}, cores=4)


def test_ceilings_decide_when_measured():
    # study D's machine: iperf3 3.12 alone 32.7, fanned out 281, iperf2 286 at -P 10, three runs each
    ceil = {"iperf3": {10: [32.1e9, 32.7e9, 33.3e9]}, "iperf3 x4": {10: [279e9, 281e9, 283e9]},
            "iperf2": {8: [242e9] * 3, 10: [285e9, 286e9, 287e9], 12: [225e9] * 3}}
    c = choose(10, {"iperf3": V312, "iperf2": V218}, cores=4, ceilings=ceil)
    assert (c.engine, c.processes) == ("iperf2", 1) and "ceiling" in c.reason and "286" in c.reason and "281" in c.reason
    assert "shown faster" in c.reason
    # the nearest measured -P is used; fan-out wins where its runs show it faster
    ceil2 = {"iperf3": {2: [20e9, 21e9, 19e9]}, "iperf3 x2": {2: [40e9, 41e9, 39e9]}, "iperf2": {2: [30e9, 31e9, 29e9]}}
    c2 = choose(3, {"iperf3": V312, "iperf2": V218}, cores=2, ceilings=ceil2)
    assert (c2.engine, c2.processes) == ("iperf3", 2) and "shown faster" in c2.reason


def test_ceilings_that_cannot_tell_the_configurations_apart_leave_it_to_the_rules():
    """Seen in a study D trial: 'fastest on this host's loopback ceiling at -P 1: iperf3 15.4
    Gbit/s (vs iperf2 14.0)' from two runs each, 13.0-17.7 and 12.1-15.9: a coin toss called
    the fastest. Now the rules decide among those within noise, and the reason says so."""
    rules = choose(4, {"iperf3": V312, "iperf2": V218}, cores=2)
    assert (rules.engine, rules.processes) == ("iperf2", 1)
    ceil = {"iperf3": {4: [13.0e9, 17.7e9]}, "iperf3 x2": {4: [12.5e9, 16.9e9]}, "iperf2": {4: [12.1e9, 15.9e9]}}
    c = choose(4, {"iperf3": V312, "iperf2": V218}, cores=2, ceilings=ceil)
    assert (c.engine, c.processes) == ("iperf2", 1) and not c.reason.startswith("fastest")
    assert "cannot tell" in c.reason and "by the rules" in c.reason and "(N=2)" in c.reason
    # one run each tells nothing either (a stored ceiling of one run)
    one = choose(4, {"iperf3": V312, "iperf2": V218}, cores=2, ceilings={"iperf3": {4: 30e9}, "iperf2": {4: 20e9}})
    assert (one.engine, one.processes) == ("iperf2", 1) and "cannot tell" in one.reason
    # a best within noise of another, while the rules' pick is shown slower: the best, said as within noise
    mixed = {"iperf3": {4: [30e9, 31e9, 29e9]}, "iperf3 x2": {4: [28e9, 33e9, 29.5e9]}, "iperf2": {4: [10e9, 10.5e9, 9.5e9]}}
    m = choose(4, {"iperf3": V312, "iperf2": V218}, cores=2, ceilings=mixed)
    assert (m.engine, m.processes) == ("iperf3", 2) and "within noise of iperf3" in m.reason


def test_auto_processes():
    assert auto_processes("iperf3", V312, 8, 2) == 2
    assert auto_processes("iperf3", V312, 1, 8) == 1
    assert auto_processes("iperf3", V319, 8, 8) == 1
    assert auto_processes("iperf2", V218, 8, 8) == 1


def test_split_streams():
    assert split_streams(10, 4) == [3, 3, 2, 2]
    assert split_streams(2, 4) == [1, 1]
    assert sum(split_streams(1000, 7)) == 1000


def _part(bps: float, cpu: float, streams: int, rtt: float, sent: int) -> Result:
    return Result(engine="iperf3", tool_version="3.12", receiver_bps=bps, sender_bps=bps * 1.01, receiver_bytes=int(bps / 8),
                      sender_bytes=sent, retransmits=3, max_cwnd=1000 * streams, rtt_mean_us=rtt, cpu_client=cpu, cpu_server=cpu / 2,
                      streams=[StreamResult(id=5 + i, receiver_bps=bps / streams) for i in range(streams)],
                      intervals=[Interval(start=t, end=t + 1, bps=bps, retransmits=1) for t in range(2)],
                      tool_cpu={"host_total": cpu}, extra={"num_streams": streams})


def test_combine_sums_exactly_and_keeps_each_process():
    wl = Workload(parallel=3, engine="iperf3")
    parts = [_part(10e9, 90.0, 2, 100.0, 1000), _part(5e9, 60.0, 1, 400.0, 3000)]
    wls = [wl.model_copy(update={"parallel": 2, "port": 5201}), wl.model_copy(update={"parallel": 1, "port": 5202})]
    r = combine("iperf3", "3.12", wls, parts)
    assert r.ok and r.receiver_bps == 15e9 and r.retransmits == 6 and r.cpu_client == 150.0 and r.cpu_server == 75.0
    assert r.max_cwnd == 2000 and r.rtt_mean_us == pytest.approx((100 * 1000 + 400 * 3000) / 4000)
    assert [s.id for s in r.streams] == [1, 2, 3] and r.extra["num_streams"] == 3 and r.extra["processes"] == 2
    assert [iv.bps for iv in r.intervals] == [15e9, 15e9] and r.intervals[0].retransmits == 2
    assert r.tool_cpu == {"host_total": 150.0}
    rows = r.extra["per_process"]
    assert [p["port"] for p in rows] == [5201, 5202] and sum(p["receiver_bps"] for p in rows) == r.receiver_bps


def test_combine_fails_when_any_process_failed():
    wl = Workload(parallel=2, engine="iperf3")
    bad = Result(engine="iperf3", ok=False, error="iperf3: connection refused")
    r = combine("iperf3", "3.12", [wl.model_copy(update={"port": 5201}), wl.model_copy(update={"port": 5202})],
                [_part(1e9, 10, 1, 10, 1), bad])
    assert not r.ok and "process 2 of 2 (port 5202)" in (r.error or "") and r.receiver_bps is None


def test_processes_field_is_checked():
    assert Workload(processes="auto").processes == "auto"
    assert Workload(processes="{p}").processes == "{p}"
    with pytest.raises(ValueError):
        Workload(processes=0)
    with pytest.raises(ValueError):
        Workload(engine="iperf4")
    assert Workload().engine == "auto" and Workload(engine="{engine}").engine == "{engine}"


@needs_iperf3
def test_dry_run_says_the_choice_and_the_split(tmp_path):
    f = tmp_path / "d.toml"
    f.write_text('name = "nettune-t-dry-auto"\n[target]\nkind = "local"\n[workload]\nparallel = 4\nprocesses = 3\n')
    out = " ".join(nettune("run", str(f), "--dry-run", check=True).stdout.split())
    assert "engine auto: iperf3 3.12 x3 processes" in out and "3 iperf3 processes on consecutive ports, -P 2+1+1" in out
