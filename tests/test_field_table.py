"""The field table (record/fields.py) is the one definition of a test's values: the store's
columns, RunRecord, the export and import columns, the analysis metrics and the --metric
help all follow it. The metric it added (iperf3's sender-side max_snd_wnd, and retransmits
per GB derived) is read from real iperf3 3.12 output and reaches every layer; older
databases get its column; the typed parts of a result replace the untyped `extra`."""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from nettune.analysis.data import METRICS, get_metric, load
from nettune.engines import get_engine
from nettune.engines.result import SideOutput, TestResult as Result
from nettune.exporters.runs import EXPORT_AFTER, JSON_FIELDS, export_table, results_table
from nettune.record.fields import EXPORTED, FIELDS, METRIC_FIELDS, STORED, metric_help
from nettune.record.point_state import PointState
from nettune.store import SCHEMA_VERSION
from nettune.store.writer import StoreWriter
from nettune.store.columns import FIELDS_VERSION
from nettune.store.records import RunRecord
from nettune.studyfile.models import Study, Workload

from conftest import ROOT

FIX = ROOT / "tests" / "fixtures" / "iperf3"
SRC = ROOT / "src" / "nettune"


def parsed(mode: str) -> tuple[Result, dict, dict]:
    """The engine's result of a recorded real test, with the client's and server's JSON."""
    d = FIX / mode
    meta = json.loads((d / "meta.json").read_text())
    side = {role: SideOutput(role=role, host="h", argv=meta[f"{role}_argv"], stdout=(d / f"{role}.stdout").read_text())
            for role in ("client", "server")}
    res = get_engine("iperf3").parse(Workload.model_validate(meta["workload"]), side["client"], side["server"])
    client = json.loads(side["client"].stdout)
    return res, client, client.get("server_output_json") or json.loads(side["server"].stdout)


def store_one(tmp_path: Path, res: Result) -> tuple[StoreWriter, RunRecord]:
    s = StoreWriter(tmp_path / "r.db")
    sid = s.begin_study(Study.model_validate({"name": "t", "target": {"kind": "local"}}), 'name = "t"\n', "t.toml")
    s.add_run(sid, s.add_point(sid, 0, {"q": 1}), 0, False, res)
    return s, s.runs(sid)[0]


# -- the table and what follows from it ----------------------------------------------

def test_every_consumer_follows_the_table(tmp_path):
    with StoreWriter(tmp_path / "r.db") as s:
        cols = {r[1]: r[2] for r in s.db.execute("PRAGMA table_info(runs)")}
    assert {f.name: f.sql for f in STORED}.items() <= cols.items()  # the DDL: every stored row, its SQL type
    assert not [f for f in FIELDS.values() if not f.stored and f.name in cols]  # derived rows are never stored
    assert set(FIELDS) <= set(RunRecord.model_fields) | {f.name for f in FIELDS.values() if not f.stored}
    assert [f.name for f in EXPORTED] == [c for c in JSON_FIELDS if c in FIELDS] == [c for c in EXPORT_AFTER if c in FIELDS]
    for name, f in METRIC_FIELDS.items():
        m = METRICS[name]
        assert (m.label, m.scale, m.higher_is_better, (m.better, m.worse)) == (f.row.label, f.row.scale, f.row.better == "higher", f.row.words)
        assert f"{name} ({f.row.label})" in metric_help()
    assert set(METRICS) == set(METRIC_FIELDS)
    for text in ("analysis_commands.py", "check_commands.py"):  # the --metric help is built from the table, not written out
        assert "metric_help()" in (SRC / "cli" / text).read_text()


def test_metric_names_of_before_the_table_still_work():
    # compare/analyze/check --metric names users have in scripts
    for name in ("total", "receiver", "sender", "reverse", "cpu_client", "cpu_server", "cpu_host", "cpu_host_softirq", "retransmits",
                 "lost_percent", "jitter_ms", "rtt_mean_us", "max_cwnd", "duration", "wall", "cpu_s", "peak_rss", "energy", "power", "meter_w"):
        assert get_metric(name).name == name
    assert (get_metric("wall").better, get_metric("total").better, get_metric("wall").higher_is_better) == ("faster", "faster", False)


# -- the new metric, from real iperf3 output --------------------------------------------

@pytest.mark.parametrize("mode", ["tcp_p4", "reverse", "bidir"])
def test_max_snd_wnd_is_the_senders_largest_send_window(mode):
    res, client, server = parsed(mode)
    # the sender's end.streams[].sender record: the client's own when it sends, else the server's
    def windows(doc: dict, sending: bool) -> list[int]:
        return [s["sender"]["max_snd_wnd"] for s in doc["end"]["streams"] if s["sender"]["sender"] is sending]
    client_sends = not client["start"]["test_start"]["reverse"]
    forward = windows(client, True) if client_sends else windows(server, True)
    assert forward and res.max_snd_wnd == max(forward)
    assert sorted(s.max_snd_wnd for s in res.streams if s.direction == "forward") == sorted(forward)
    if mode == "bidir":  # the other direction: the server sends, its record says
        assert res.reverse is not None and res.reverse.max_snd_wnd == max(windows(server, True) if client_sends else windows(client, True))
    assert res.retrans_per_gb == pytest.approx(res.retransmits / (res.sender_bytes / 1e9))


def test_udp_has_no_send_window():
    res, _, _ = parsed("udp")
    assert res.ok and res.max_snd_wnd is None and res.retrans_per_gb is None


@pytest.mark.parametrize("mode", ["tcp_p4", "reverse", "bidir", "udp"])
def test_interval_streams_join_the_streams_and_add_up(mode):
    res, client, _ = parsed(mode)
    ids = {(s.id, s.direction) for s in res.streams}
    assert res.intervals and all(iv.streams for iv in res.intervals)
    for iv in res.intervals:
        assert {(st.id, iv.direction) for st in iv.streams} <= ids
        assert [st.bps for st in iv.streams] == iv.stream_bps
        if iv.retransmits is not None:  # TCP: the sender's counts per stream add up to the interval's
            assert sum(st.retransmits for st in iv.streams) == iv.retransmits
            assert max(st.cwnd for st in iv.streams) == iv.cwnd
    # bytes of each stream over the intervals: iperf3's own per-interval records
    first = res.intervals[0]
    raw = {s["socket"]: s["bytes"] for s in client["intervals"][0]["streams"]}
    assert all(raw[st.id] == st.bytes for st in first.streams)


def test_the_new_metric_reaches_the_store_exports_and_the_analysis(tmp_path):
    res, _, _ = parsed("tcp_p4")
    s, run = store_one(tmp_path, res)
    with s:
        assert run.max_snd_wnd == res.max_snd_wnd and run.retrans_per_gb == pytest.approx(res.retrans_per_gb)
        assert run["max_snd_wnd"] == res.max_snd_wnd
        [row] = export_table([run]).rows
        assert row["max_snd_wnd"] == res.max_snd_wnd and row["retrans_per_gb"] == pytest.approx(res.retrans_per_gb)
        assert results_table([run]).rows[0]["max_snd_wnd"] == res.max_snd_wnd
        data = load(s, "t")
        assert data.points[0].values(get_metric("max_snd_wnd")) == [float(res.max_snd_wnd)]
        assert data.points[0].values(get_metric("retrans_per_gb")) == [pytest.approx(res.retrans_per_gb)]


# -- the schema: additive, versioned ---------------------------------------------------

def test_a_database_without_the_new_column_gets_it(tmp_path):
    res, _, _ = parsed("tcp_p4")
    s, _ = store_one(tmp_path, res)
    s.close()
    con = sqlite3.connect(tmp_path / "r.db")  # as a nettune before the column wrote it
    con.execute("ALTER TABLE runs DROP COLUMN max_snd_wnd")
    con.execute("DELETE FROM meta WHERE key='fields_version'")
    con.commit()
    con.close()
    with StoreWriter(tmp_path / "r.db") as s:
        meta = dict(s.db.execute("SELECT key, value FROM meta").fetchall())
        [run] = s.runs(1)
        assert "max_snd_wnd" in {r[1] for r in s.db.execute("PRAGMA table_info(runs)")}
    assert meta == {"schema_version": str(SCHEMA_VERSION), "fields_version": str(FIELDS_VERSION)}
    assert run.max_snd_wnd is None and run.receiver_bps == res.receiver_bps  # stored before it was parsed: unknown


def test_a_column_from_a_newer_nettune_is_left_out(tmp_path):
    s, _ = store_one(tmp_path, parsed("tcp_p4")[0])
    s.db.execute("ALTER TABLE runs ADD COLUMN some_future_metric REAL")
    s.db.execute("UPDATE meta SET value='99' WHERE key='fields_version'")
    s.db.commit()
    s.close()
    with StoreWriter(tmp_path / "r.db") as s:
        [run] = s.runs(1)
        assert s.db.execute("SELECT value FROM meta WHERE key='fields_version'").fetchone()[0] == "99"
    assert run.ok and "some_future_metric" not in run.to_dict()


# -- typed parts instead of extra -----------------------------------------------------

LEGACY = {
    "pair": "a->b", "server": "a", "client": "b", "round": 1, "round_pairs": 2, "parallel": True, "round_total_bps": 2e9,
    "command": {"host": "a", "wall_s": 1.5, "cpu_s": 1.2, "exit_code": 0, "timed_out": False,
                "setup": {"argv": ["true"], "exit_code": 0, "timed_out": False, "stderr_tail": []}},
    "energy": {"machine": {"joules": {"package-0": 7.0, "dram": 0.5}, "watts": 5.0}, "hypervisor:pve": {"why": "no powercap zones"},
               "meter": {"watts": 100.0, "joules": 150.0, "min_w": 99.0, "max_w": 101.0, "samples": 2}},
    "reverse": {"sender_bytes": 10, "receiver_bytes": 9, "lost_percent": 1.0},
    "num_streams": 4, "sender_tcp_congestion": "cubic", "processes": 2,
    "per_process": [{"process": 0, "port": 5201, "parallel": 2, "ok": True, "error": None, "sender_bps": 1e9, "receiver_bps": 1e9,
                     "reverse_receiver_bps": None, "sender_bytes": 10, "receiver_bytes": 10, "retransmits": 0, "cpu_client": 50.0,
                     "cpu_server": 40.0, "tool_cpu": {"host_total": 50.0}, "streams": 2, "client": None, "server": None}],
    "engine_choice": {"engine": "iperf3", "processes": 2, "version": "3.12", "reason": "why", "label": "iperf3 3.12 x2 processes"},
    "server_access": {"bind": "198.18.0.2", "auth": None},
}


def test_a_result_built_from_extra_has_typed_parts_and_gives_the_same_extra_back():
    r = Result(engine="iperf3", receiver_bps=1e9, extra=LEGACY)
    assert (r.pair.pair, r.pair.round, r.pair.round_total_bps) == ("a->b", 1, 2e9)
    assert r.command.wall_s == 1.5 and r.command.setup.exit_code == 0
    assert r.energy.energy_j == 7.5 and r.energy.power_w == 5.0 and r.energy.meter_j == 150.0
    assert r.energy.energy_why == "hypervisor:pve: no powercap zones"
    assert r.reverse.lost_percent == 1.0 and r.tool.num_streams == 4 and r.fanout.processes == 2
    assert r.engine_choice.reason == "why" and r.details == {"server_access": {"bind": "198.18.0.2", "auth": None}}
    assert dict(r.extra) == json.loads(json.dumps(LEGACY))
    with pytest.raises(TypeError):
        r.extra["pair"] = "x"  # a view: the parts are where a value is set


def test_a_stored_run_reads_its_parts_back_and_bad_ones_as_absent(tmp_path):
    bad = dict(LEGACY, energy={"machine": {"joules": "lots"}}, round="first")
    s, run = store_one(tmp_path, Result(engine="iperf3", receiver_bps=1e9, extra=bad))
    with s:
        assert run.energy is None and run.pair is None  # did not validate: kept as it was, read as absent
        assert run.extra["energy"] == bad["energy"] and run.extra["round"] == "first"
        assert run.command.wall_s == 1.5 and run.processes == 2 and run.tool.num_streams == 4
        assert run.wall_s == 1.5 and run.energy_j is None


def test_timed_out_command_has_no_wall_seconds():
    r = Result(engine="command", extra={"command": {"wall_s": 3600.0, "timed_out": True}})
    assert r.command.wall_s is None and r.command.timed_out


def test_no_extra_is_read_where_the_parts_are():
    """analysis/, report/, exporters/ and knobs/ read the typed parts, never a result's or a
    stored run's `extra` (a ResolvedPoint's `rp.extra`, the plan's knobs, is another thing)."""
    found = []
    for pkg in ("analysis", "report", "exporters", "knobs"):
        for path in sorted((SRC / pkg).rglob("*.py")):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"(?<!rp)\.extra(\[|\.get\()", line.split("#")[0]):
                    found.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


# -- what a target reports in force ----------------------------------------------------

def test_point_state_reads_typed_and_as_the_dict_it_was():
    stored = {"hosts": {"a": {"interface": "ntab", "address": "198.18.0.2", "mtu": 9000, "tx_queues": 4, "rx_queues": 4}},
              "shaping": {"a": {"host_end": ["tbf"]}}, "knobs": {"machine": {"sysctl:net.core.rmem_max": 8388608}}}
    st = PointState.from_json(stored)
    assert st.hosts["a"].mtu == 9000 and st.knobs["machine"]["sysctl:net.core.rmem_max"] == 8388608
    assert st["hosts"]["a"]["tx_queues"] == 4 and st["shaping"]["a"]["host_end"] == ["tbf"] and "nodes" not in st
    assert st.to_json() == stored
    later = PointState.from_json({"hosts": {"a": {"mtu": 1500}}})
    assert st.merged(later).to_json() == stored | {"hosts": {"a": {"mtu": 1500}}}  # the read-back wins, the knobs stay
    assert PointState.from_json({"hosts": "garbage", "x": 1}).to_json() == {"x": 1}
    assert PointState.from_json(None).to_json() == {}


# -- exports written before the table ---------------------------------------------------

OLD_HEADER = ("study,study_id,point_idx,queues,run,warmup,ok,error,engine,tool_version,protocol,started,duration,pair,server,client,round,"
              "round_total_bps,total_bps,sender_bps,receiver_bps,sender_bytes,receiver_bytes,retransmits,max_cwnd,rtt_mean_us,rtt_min_us,"
              "rtt_max_us,jitter_ms,lost_packets,packets,lost_percent,reverse_sender_bps,reverse_receiver_bps,reverse_retransmits,"
              "cpu_client,cpu_server,cpu_host,cpu_host_softirq,cpu_units,n_streams,warnings")


def test_an_export_written_before_the_table_still_imports(tmp_path):
    """The header `nettune export` wrote before the field table (docs/results.md then): the
    columns added since come back empty, n_streams as the tool's count."""
    from nettune.importers.nettune_export import import_exports, read_exports

    f = tmp_path / "old.csv"
    f.write_text(OLD_HEADER + "\n" + "A,3,0,8,1,False,True,,iperf3,3.10,tcp,1700000000.5,10.0,,,,,,9.5e9,9.6e9,9.5e9,1200,1190,7,"
                 "1048576,120.5,80.0,300.0,,,,,,,,90.0,40.0,30.0,5.0,cpu_client=pct_core;cpu_host=pct_of_16,4,\n")
    with StoreWriter(tmp_path / "r.db") as s:
        import_exports(s, read_exports([f]), "back")
        [run] = s.runs(s.find_study("back")["id"])
    assert (run.point, run.run, run.tool_version, run.receiver_bps, run.retransmits) == ({"queues": 8}, 1, "3.10", 9.5e9, 7)
    assert (run.cpu_units["cpu_host"], run.cpu_units["cpu_server"], run.n_streams) == ("pct_of_16", "pct_core", 4)  # declared, native
    assert run.max_snd_wnd is None and run.wall_s is None and run.streams == [] and run.intervals == []


def test_an_export_with_a_bad_key_or_study_file_is_one_line(tmp_path):
    from nettune.errors import NettuneError
    from nettune.importers.nettune_export import read_exports

    f = tmp_path / "old.csv"
    f.write_text(OLD_HEADER + "\n" + "A,3,0,8,first,False,True,,iperf3,3.10,tcp,1.5,10.0" + "," * 29 + "\n")
    with pytest.raises(NettuneError, match=r"old.csv: row 1: run is 'first'"):
        read_exports([f])
    f.write_text(OLD_HEADER + "\n" + "A,3,0,8,1,False,True,,iperf3,3.10,tcp,1.5,10.0" + "," * 29 + "\n")
    (tmp_path / "old.study.json").write_text(json.dumps({"nettune_export": 1, "name": "A", "spec_json": json.dumps({"sweep": [1]}), "facts": {}}))
    with pytest.raises(NettuneError, match=r"old.study.json: spec_json \(its sweep, its workload\)"):
        read_exports([f])
