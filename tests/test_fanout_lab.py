"""Fan-out and engine choice on the real lab with the real iperf3 3.12 and iperf 2.1.8:
processes = 4 runs four iperf3 processes whose sum is the stored result; a study sweeps
the engine; engine = "auto" says what it picked and why."""
import json

from conftest import lab_leftovers, needs_iperf2, needs_iperf3, needs_root, nettune

pytestmark = [needs_root, needs_iperf3]


def test_four_processes_sum_exactly(tmp_path):
    db, f = tmp_path / "r.db", tmp_path / "f.toml"
    f.write_text("""
name = "nettune-t-fan4"
[target]
kind = "lab"
[workload]
engine = "iperf3"
processes = 4
parallel = 6
duration = 1
""")
    nettune("run", str(f), "--db", str(db), check=True)
    from nettune import Store

    with Store(db) as s:
        run = s.runs(s.find_study("nettune-t-fan4")["id"])[0]
    assert run["ok"], run["error"]
    rows = run["extra"]["per_process"]
    assert run["extra"]["processes"] == 4 and len(rows) == 4
    ports = [p["port"] for p in rows]
    assert ports == list(range(ports[0], ports[0] + 4))  # consecutive ports
    assert [p["parallel"] for p in rows] == [2, 2, 1, 1] and len(run["streams"]) == 6
    for p in rows:  # each process really ran: its own command line and its own JSON
        assert p["client"]["argv"][:2] == ["iperf3", "-c"] and str(p["port"]) in p["client"]["argv"]
        doc = json.loads(p["client"]["stdout"])
        assert doc["end"]["sum_received"]["bits_per_second"] == p["receiver_bps"]
        assert doc["start"]["test_start"]["num_streams"] == p["parallel"]
        assert p["cpu_client"] is not None and p["cpu_server"] is not None
    assert run["receiver_bps"] == sum(p["receiver_bps"] for p in rows)
    assert run["sender_bytes"] == sum(p["sender_bytes"] for p in rows)
    assert run["cpu_client"] == sum(p["cpu_client"] for p in rows)
    assert not lab_leftovers()


@needs_iperf2
def test_engine_sweep_and_auto_choice_on_the_lab(tmp_path):
    db, f = tmp_path / "r.db", tmp_path / "f.toml"
    f.write_text("""
name = "nettune-t-engines"
[target]
kind = "lab"
[workload]
engine = "{engine}"
parallel = 2
duration = 1
[sweep]
engine = ["iperf3", "iperf2", "auto"]
""")
    out = nettune("run", str(f), "--db", str(db), check=True).stdout
    assert "engine auto:" in out  # said before the tests run
    from nettune import Store

    with Store(db) as s:
        recs = {r["point"]["engine"]: r for r in s.runs(s.find_study("nettune-t-engines")["id"])}
    assert all(r["ok"] for r in recs.values())
    assert recs["iperf3"]["engine"] == "iperf3" and recs["iperf2"]["engine"] == "iperf2"
    choice = recs["auto"]["extra"]["engine_choice"]  # stored with the test
    assert choice["engine"] == recs["auto"]["engine"] and choice["reason"]
    # iperf3 3.12 here, 2 streams: one iperf3 process would run both on one thread while the
    # machine has more cores, so iperf2 (a thread per stream) where installed; fan-out on a
    # machine of one core never (one core is all any tool gets)
    import os

    if len(os.sched_getaffinity(0)) > 1:
        assert (choice["engine"], choice["processes"]) == ("iperf2", 1) and recs["auto"]["engine"] == "iperf2"
        assert "one thread" in choice["reason"] and "thread per stream" in choice["reason"]
    else:
        assert (choice["engine"], choice["processes"]) == ("iperf3", 1)
    analysis = nettune("analyze", "nettune-t-engines", "--db", str(db), check=True).stdout
    assert "engine auto picked" in analysis
    assert not lab_leftovers()
