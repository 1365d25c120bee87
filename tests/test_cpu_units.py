"""The unit of every CPU figure (issue 12): stored with each run (schema 4), declared by a
table import (`--cpu-unit`), converted to cores for every verdict, named in every header."""
import sqlite3
from pathlib import Path

import pytest

from nettune.analysis.analyze import analyze
from nettune.analysis.data import load
from nettune.engines.result import TestResult as Result
from nettune.report.table import columns
from nettune.store.writer import StoreWriter
from nettune.store import sqlite as st
from nettune.store.cpu_units import label, to_cores

from conftest import nettune
from study_builders import build


def test_conversions_and_labels():
    assert to_cores(50, "pct_core", None) == 0.5
    assert to_cores(50, "pct_of_16", None) == 8.0
    assert to_cores(25, "pct_machine", 8) == 2.0 and to_cores(25, "pct_machine", None) is None
    assert to_cores(1.5, "cores", None) == 1.5
    assert [label(u, 8) for u in ("pct_core", "pct_machine", "pct_of_16", "cores")] == ["% of 1 core", "% of 8 cores", "% of 16 cores", "cores"]


def test_live_runs_store_the_probes_units(tmp_path):
    with StoreWriter(tmp_path / "r.db") as s:
        build(s, "u", [({"q": 1}, 1.0)], runs=1)
        sid = s.find_study("u")["id"]
        pid = s.add_point(sid, 1, {"q": 2})
        s.add_run(sid, pid, 0, False, Result(engine="iperf3", receiver_bps=1e9, cpu_client=50.0, cpu_extra={"hypervisor:pve": 12.0, "nettune": 3.0}))
        runs = s.runs(sid)
    assert runs[0].cpu_units == {"cpu_client": "pct_core", "cpu_server": "pct_core", "cpu_host": "pct_machine"}
    assert runs[1].cpu_units == {"cpu_client": "pct_core", "hypervisor:pve": "pct_machine", "nettune": "pct_core"}


def test_a_schema_3_database_gets_the_units(tmp_path):
    db = tmp_path / "old.db"
    with StoreWriter(db) as s:
        build(s, "old", [({"q": 1}, 1.0)], runs=2)
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE runs DROP COLUMN cpu_units_json")
    con.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    con.commit()
    con.close()
    with StoreWriter(db) as s:
        assert s.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(st.SCHEMA_VERSION)
        runs = s.runs(s.find_study("old")["id"])
    assert all(r.cpu_units == {"cpu_client": "pct_core", "cpu_server": "pct_core", "cpu_host": "pct_machine"} for r in runs)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    f = tmp_path / "studyA.csv"
    # study A's published table: host CPU as % of the 16-vCPU VM
    f.write_text("queues,gbps,vm cpu\n" + "".join(f"{q},{g},{c}\n" for q, g, c in
                                                   [(1, 10.0, 5), (1, 10.4, 5), (4, 35.0, 12), (4, 35.6, 12), (16, 70.0, 40), (16, 70.8, 41)]))
    return f


def test_an_import_declares_its_unit_and_the_verdicts_convert(tmp_path, table):
    db = tmp_path / "r.db"
    p = nettune("import", str(table), "--study", "pub", "--columns", "queues,gbps=receiver_gbps,vm cpu=cpu_host",
                "--cpu-unit", "cpu_host=pct_of_16", "--db", str(db))
    assert p.returncode == 0, p.stderr
    with StoreWriter(db) as s:
        runs = s.runs(s.find_study("pub")["id"])
        res = analyze(load(s, "pub"))
    assert all(r.cpu_units == {"cpu_host": "pct_of_16"} for r in runs)
    host = next(e for e in res.efficiency if e.cost == "cpu_host")
    assert host.point == {"queues": 16} and host.cost_value == pytest.approx(40.5 / 100 * 16)  # 6.5 cores, not 0.4
    assert res.cpu_units["host"] == "% of 16 cores"
    head, _ = columns(runs)
    assert "host CPU (% of 16 cores)" in head
    out = nettune("results", "pub", "--db", str(db)).stdout
    assert "% of 16 cores" in out
    rep = nettune("report", "pub", "--db", str(db), "--out", str(tmp_path / "rep"))
    assert rep.returncode == 0, rep.stderr
    assert "| host CPU (% of 16 cores) |" in (tmp_path / "rep" / "report.md").read_text()


def test_mixed_units_show_cores(tmp_path, table):
    db = tmp_path / "r.db"
    nettune("import", str(table), "--study", "mix", "--columns", "queues,gbps=receiver_gbps,vm cpu=cpu_host", "--cpu-unit", "pct_of_16",
            "--db", str(db), check=True)
    with StoreWriter(db) as s:
        sid = s.find_study("mix")["id"]
        pid = s.add_point(sid, 9, {"queues": 32})
        s.add_run(sid, pid, 0, False, Result(engine="iperf3", receiver_bps=71e9, cpu_host=50.0))  # nettune's own: % of the machine
        runs = s.runs(sid)
        res = analyze(load(s, "mix"))
    assert res.cpu_units["host"] == "cores"
    head, rows = columns(runs)
    assert "host CPU (mixed units)" in head
    cell = head.index("host CPU (mixed units)")
    assert rows[0][cell] == "5 % of 16 cores"


@pytest.mark.parametrize("args,msg", [
    (["--cpu-unit", "pct_core"], "--cpu-unit goes with --columns"),
    (["--columns", "queues,gbps=receiver_gbps,-", "--cpu-unit", "pct_core"], "maps no CPU column"),
    (["--columns", "queues,gbps=receiver_gbps,vm cpu=cpu_host", "--cpu-unit", "percent"], "--cpu-unit 'percent': use pct_core"),
    (["--columns", "queues,gbps=receiver_gbps,vm cpu=cpu_host", "--cpu-unit", "cpu_server=cores"], "not a CPU column --columns maps"),
])
def test_bad_cpu_units_are_one_line_errors(tmp_path, table, args, msg):
    db = tmp_path / "r.db"
    p = nettune("import", str(table), "--study", "x", *args, "--db", str(db))
    assert p.returncode == 2 and msg in p.stderr and "Traceback" not in p.stderr and not db.exists()


def test_units_survive_an_export_and_import(tmp_path, table):
    db = tmp_path / "r.db"
    nettune("import", str(table), "--study", "pub", "--columns", "queues,gbps=receiver_gbps,vm cpu=cpu_host", "--cpu-unit", "pct_of_16",
            "--db", str(db), check=True)
    csv_out = nettune("export", "pub", "--db", str(db), "--format", "csv", check=True).stdout
    assert "cpu_units" in csv_out.splitlines()[0] and "cpu_host=pct_of_16" in csv_out
    f = tmp_path / "pub.csv"
    f.write_text(csv_out)
    nettune("import", str(f), "--study", "back", "--db", str(tmp_path / "b.db"), check=True)
    with StoreWriter(tmp_path / "b.db") as s:
        runs = s.runs(s.find_study("back")["id"])
    assert runs and all(r.cpu_units == {"cpu_host": "pct_of_16"} for r in runs)


def test_study_a_table_has_the_server_vm_the_hypervisor_and_the_client_vm(tmp_path):
    """Issue 32: study A's three machines, each in % of its own cores, beside the processes."""
    with StoreWriter(tmp_path / "r.db") as s:
        from nettune.studyfile.models import Study

        sid = s.begin_study(Study.model_validate({"name": "a", "target": {"kind": "local"}}), 'name = "a"\n', "a.toml")
        pid = s.add_point(sid, 0, {"queues": 4, "streams": 8})
        s.add_run(sid, pid, 0, False, Result(engine="iperf3", receiver_bps=20e9, cpu_server=90.0, cpu_client=80.0, cpu_host=31.0,
                                             cpu_server_host=42.0, cpu_server_host_softirq=30.0, cpu_extra={"hypervisor:pve": 55.0}))
        runs = s.runs(sid)
    assert runs[0].cpu_units["cpu_server_host"] == "pct_machine"
    head, rows = columns(runs)
    cells = dict(zip(head, rows[0]))
    assert cells["server machine CPU (% of all cores)"] == "42" and cells["pve CPU (% of all cores)"] == "55"
    assert cells["host CPU (% of all cores)"] == "31" and cells["server CPU (% of 1 core)"] == "90"
