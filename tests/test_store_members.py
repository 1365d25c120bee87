"""The store's protocol on both members: SQLite (a file) and PostgreSQL (a throwaway
cluster from the distribution's package, tests/pg_cluster.py). Every test here runs on
each member; the PostgreSQL ones skip, saying why, where no cluster can start.

What each must keep: a test committed the moment it is stored (another connection sees
it), a round stored all or nothing, an import that fails adds nothing, one `--resume`
claim wins, the same values back as went in (the two members give identical runs),
versioned migrations of an older database, a newer one refused, and several processes
writing at once without losing or mixing a test.
"""
from __future__ import annotations

import json
import multiprocessing
import sqlite3
import subprocess
import sys

import pytest

from conftest import nettune
from study_builders import build, study_a
from nettune.engines.result import TestResult as Result
from nettune.errors import NettuneError
from nettune.store import SCHEMA_VERSION, store_at
from nettune.store.columns import FIELDS_VERSION
from nettune.studyfile.models import Study


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path) -> str:
    """A new, empty database of each member: a file path, or a postgresql:// URL."""
    if request.param == "sqlite":
        return str(tmp_path / "r.db")
    return request.getfixturevalue("pg_url")


def _raw(db: str, query: str, args: tuple = ()) -> list[tuple]:
    """A statement on a connection of the member's own driver, outside nettune."""
    if "://" in db:
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            cur = conn.execute(query.replace("?", "%s"), args)
            return cur.fetchall() if cur.description else []
    con = sqlite3.connect(db)
    try:
        cur = con.execute(query, args)
        out = cur.fetchall()
        con.commit()
        return out
    finally:
        con.close()


def _study(name: str = "s") -> Study:
    return Study.model_validate({"name": name, "target": {"kind": "local"}})


def test_a_stored_test_is_visible_to_another_connection_at_once(db):
    with store_at(db) as s:
        sid = s.begin_study(_study(), "x", "s.toml", owner="1 2")
        pid = s.add_point(sid, 0, {"q": 1})
        s.add_run(sid, pid, 0, False, Result(engine="iperf3", receiver_bps=1e9))
        # nettune still holds its connection open (a study runs on): the test is already durable
        assert _raw(db, "SELECT receiver_bps FROM runs") == [(1e9,)]
        assert s.add_point(sid, 0, {"q": 1}) == pid  # a resumed study keeps its point row


def test_a_round_is_stored_whole_or_not_at_all(db):
    with store_at(db) as s:
        sid = s.begin_study(_study())
        pid = s.add_point(sid, 0, {})
        with pytest.raises(AttributeError):
            s.add_runs(sid, pid, 0, False, [Result(engine="iperf3", receiver_bps=1e9), "not a result"])  # type: ignore[list-item]
        assert s.runs(sid) == []
        s.add_runs(sid, pid, 0, False, [Result(engine="iperf3", receiver_bps=1e9), Result(engine="iperf3", receiver_bps=2e9)])
        assert [r.receiver_bps for r in s.runs(sid)] == [1e9, 2e9]


def test_a_failed_transaction_adds_nothing(db):
    with store_at(db) as s:
        with pytest.raises(RuntimeError):
            with s.transaction():
                sid = s.begin_study(_study("imp"), status="imported")
                s.add_run(sid, s.add_point(sid, 0, {}), 0, False, Result(engine="iperf3", receiver_bps=1e9))
                raise RuntimeError("the import's third file is unreadable")
        assert s.studies() == [] and _raw(db, "SELECT COUNT(*) FROM runs") == [(0,)]


def test_one_resume_claim_wins(db):
    with store_at(db) as a, store_at(db) as b:
        sid = a.begin_study(_study(), owner="100 5 boot m1")
        a.finish_study(sid, "interrupted")
        was = a.named("s")[0]
        assert a.claim_study(sid, "200 6 boot m2", was) is True
        assert b.claim_study(sid, "300 7 boot m3", was) is False  # read the same row: too late
        assert b.named("s")[0]["owner"] == "200 6 boot m2" and b.named("s")[0]["status"] == "running"


def test_both_members_give_back_the_same_values(tmp_path, pg_url):
    """The same study written to each member reads back identical, to the last bit."""
    got = {}
    for where in (str(tmp_path / "r.db"), pg_url):
        with store_at(where) as s:
            study_a(s)
            build(s, "mesh-ish", [({"parallel": 2}, 9.5)], runs=2, facts={"h": {"kernel": "Linux 6.1", "doctor": []}})
            got[where] = {"runs": [r.to_dict() | {"started": None} for sid in (1, 2) for r in s.runs(sid)],
                          "facts": s.facts(1), "points": s.points(1),
                          "studies": [{k: v for k, v in x.items() if k not in ("started", "finished")} for x in s.studies()]}
    a, b = got.values()
    assert a == b and len(a["runs"]) == 42 + 2


def test_a_schema_4_database_is_migrated(db):
    with store_at(db) as s:
        build(s, "old", [({"q": 1}, 1.0)], runs=2)
    # as nettune before schemas 5 and 6 and fields version 2 left it: ceilings of one run, loopback only
    _raw(db, "ALTER TABLE studies DROP COLUMN nettune_version")
    for col in ("path", "runs", "ci_low", "ci_high", "values_json"):
        _raw(db, f"ALTER TABLE ceilings DROP COLUMN {col}")
    _raw(db, "INSERT INTO ceilings (machine, config, engine, processes, streams, bps, measured) VALUES (?,?,?,?,?,?,?)",
         ("m1", "iperf3", "iperf3", 1, 2, 9e9, 1.0))
    _raw(db, "ALTER TABLE runs DROP COLUMN max_snd_wnd")
    _raw(db, "DROP TABLE change_points")  # schema 7's
    _raw(db, "UPDATE meta SET value='4' WHERE key='schema_version'")
    _raw(db, "UPDATE meta SET value='1' WHERE key='fields_version'")
    with store_at(db) as s:
        assert s.named("old")[0]["nettune_version"] is None  # unknown for a study stored before
        assert [r.receiver_bps is not None and r.max_snd_wnd is None for r in s.runs(1)] == [True, True]
        sid = s.begin_study(_study("new"))
        assert s.named("new")[0]["nettune_version"]  # the running nettune's
        # schema 6: the old ceiling is a loopback one of one run, without an interval
        assert s.ceilings("m1") == {"iperf3": {2: 9e9}} and s.ceiling_runs("m1") == {"loopback": {"iperf3": {"2": [9e9]}}}
        assert [(r["path"], r["runs"], r["ci_low"]) for r in s.ceiling_rows("m1")] == [("loopback", None, None)]
        s.add_ceilings("m1", [{"config": "iperf3", "engine": "iperf3", "processes": 1, "streams": 2, "values": [8e9, 10e9]}], "lab mtu=1500")
        lab = [r for r in s.ceiling_rows("m1") if r["path"] == "lab mtu=1500"]
        assert len(lab) == 1 and lab[0]["runs"] == 2 and lab[0]["ci_low"] < 9e9 < lab[0]["ci_high"] and s.ceilings("m1") == {"iperf3": {2: 9e9}}
        assert s.find_study(sid)["name"] == "new"
        assert s.change_points("old") == []  # schema 7: the table, empty
    assert dict(_raw(db, "SELECT key, value FROM meta")) == {"schema_version": str(SCHEMA_VERSION), "fields_version": str(FIELDS_VERSION)}


def test_a_newer_schema_is_refused_in_one_line(db):
    with store_at(db):
        pass
    _raw(db, "UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(NettuneError, match=r"written by a newer nettune \(schema 99 > \d+\); upgrade nettune"):
        store_at(db)


def _writer(db: str, name: str, n: int, bps: float, go) -> None:
    go.wait()
    with store_at(db) as s:
        sid = s.begin_study(_study(name), owner=name)
        for i in range(n):
            pid = s.add_point(sid, i, {"i": i})
            s.add_run(sid, pid, 0, False, Result(engine="iperf3", receiver_bps=bps + i))
            s.add_runs(sid, pid, 1, False, [Result(engine="iperf3", receiver_bps=bps + i + 0.5)] * 2)
        s.finish_study(sid, "done")


def test_two_writers_at_once_lose_nothing_and_mix_nothing(db):
    with store_at(db):
        pass  # created first: the race is over the writes (two first openers are another test)
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(db, name, 40, bps, go)) for name, bps in (("w1", 1e9), ("w2", 5e9))]
    for p in procs:
        p.start()
    go.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with store_at(db) as s:
        for name, bps in (("w1", 1e9), ("w2", 5e9)):
            st = s.find_study(name)
            runs = s.runs(st["id"])
            assert st["status"] == "done" and len(runs) == 40 * 3
            # every run is in its own study, at its own point, with its own value
            assert sorted((r.point_idx, r.run, r.receiver_bps) for r in runs) == sorted(
                [(i, 0, bps + i) for i in range(40)] + [(i, 1, bps + i + 0.5) for i in range(40)] * 2)


def test_two_first_openers_create_the_schema_once(pg_url):
    code = ("import sys; from nettune.store import store_at\n"
            "with store_at(sys.argv[1]) as s: print(len(s.studies()))")
    procs = [subprocess.Popen([sys.executable, "-c", code, pg_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, outs
    assert _raw(pg_url, "SELECT key, value FROM meta ORDER BY key") == [("fields_version", str(FIELDS_VERSION)),
                                                                       ("schema_version", str(SCHEMA_VERSION))]


def test_the_cli_takes_a_url_and_nettune_db(tmp_path, pg_url):
    with store_at(pg_url) as s:
        study_a(s)
    out = nettune("studies", "--db", pg_url, check=True).stdout
    assert " A " in out and "42" in out
    assert "?host=" not in out or "postgresql://" in out
    env = {"NETTUNE_DB": pg_url}
    a = json.loads(nettune("analyze", "A", "--format", "json", env=env, check=True, cwd=tmp_path).stdout)
    assert a["study"] == "A" and not (tmp_path / "nettune.db").exists()  # NETTUNE_DB, not the default file


def test_export_and_import_move_a_study_both_ways(tmp_path, pg_url):
    lite = tmp_path / "r.db"
    with store_at(lite) as s:
        study_a(s)
    nettune("export", "A", "--db", str(lite), "-f", "json", "--series", "-o", str(tmp_path / "a.json"), check=True)
    nettune("import", str(tmp_path / "a.json"), "--study", "A-pg", "--db", pg_url, check=True)
    nettune("export", "A-pg", "--db", pg_url, "-f", "json", "--series", "-o", str(tmp_path / "b.json"), check=True)
    nettune("import", str(tmp_path / "b.json"), "--study", "A-back", "--db", str(lite), check=True)
    keys = ("study", "study_id", "run_id", "source")
    rows = {name: [{k: v for k, v in r.items() if k not in keys} for r in json.loads((tmp_path / f).read_text())]
            for name, f in (("a", "a.json"), ("b", "b.json"))}
    assert rows["a"] == rows["b"] and len(rows["a"]) == 42
    an = {db_: json.loads(nettune("analyze", name, "--db", db_, "--format", "json", check=True).stdout)
          for name, db_ in (("A", str(lite)), ("A-pg", pg_url), ("A-back", str(lite)))}
    drop = ("study", "study_id")
    first, *others = [{k: v for k, v in x.items() if k not in drop} for x in an.values()]
    assert all(o == first for o in others)


def test_a_database_that_cannot_be_reached_is_one_line(tmp_path):
    p = nettune("studies", "--db", f"postgresql://nobody:secret@/x?host={tmp_path}", timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("error: --db postgresql://nobody:***@") and "cannot connect" in p.stderr
    assert "Traceback" not in p.stderr and "secret" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = nettune("studies", "--db", "mysql://x/y")
    assert p.returncode == 2 and "unknown database kind 'mysql'" in p.stderr


def test_a_failed_import_into_postgresql_adds_nothing(tmp_path, pg_url):
    lite = tmp_path / "r.db"
    with store_at(lite) as s:
        study_a(s)
    nettune("export", "A", "--db", str(lite), "-f", "csv", "-o", str(tmp_path / "a.csv"), check=True)
    nettune("import", str(tmp_path / "a.csv"), "--study", "A", "--db", pg_url, check=True)
    p = nettune("import", str(tmp_path / "a.csv"), "--study", "A", "--db", pg_url)
    assert p.returncode == 2 and "already in" in p.stderr
    assert _raw(pg_url, "SELECT COUNT(*) FROM studies") == [(1,)]
