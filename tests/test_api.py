"""The public Python API without a lab (issue 35): what `import nettune` shows, the
read-only Store, the tidy frames' dtypes and units, the analysis' one unit system, the
comparison across studies, and what run_study refuses before touching anything. The runs
from a notebook, a thread and plain Python are tests/test_api_notebook.py's (root)."""
from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import pydoc
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nettune
from nettune.engines.result import Interval, IntervalStream, StreamResult, TestResult as Result
from nettune.errors import NettuneError, SpecError
from nettune.record.point_state import HostState, PointState
from nettune.store.writer import StoreWriter
from nettune.studyfile.models import Study
from study_builders import build, study_a

PUBLIC = ["Analysis", "NettuneError", "Outcome", "Point", "Progress", "ProgressUpdate", "Results", "RunRecord", "SpecError",
          "Store", "Study", "StudyComparison", "TestResult", "__version__", "expand", "load_study", "parse_study", "results",
          "run_study"]


# -- what the package shows ------------------------------------------------------------
def test_dir_lists_exactly_the_public_names():
    assert dir(nettune) == sorted(nettune.__all__) == sorted(PUBLIC)
    for junk in ("Any", "TYPE_CHECKING", "annotations", "importlib"):
        assert junk not in dir(nettune)


def test_importing_nettune_loads_neither_pandas_nor_the_run_layer():
    code = ("import sys, nettune; from nettune import results, run_study, Store; "
            "print(sorted(m for m in ('pandas', 'scipy', 'pyroute2', 'nettune.run.study') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("name", [n for n in PUBLIC if n != "__version__"])
def test_every_public_name_has_our_docstring_with_an_example(name):
    obj = getattr(nettune, name)
    doc = obj.__doc__ or ""
    assert "Example" in doc or "::" in doc, f"nettune.{name} has no example in its docstring"
    text = pydoc.render_doc(obj, renderer=pydoc.plaintext)
    assert "Usage docs" not in text and "A base class for creating Pydantic models" not in text


def test_the_store_exposes_no_writer():
    writers = {"begin_study", "claim_study", "add_point", "add_facts", "add_runs", "add_run", "finish_study", "add_idle"}
    assert not writers & set(dir(nettune.Store))
    assert writers <= set(dir(StoreWriter))


# -- the read-only Store ---------------------------------------------------------------
def test_a_missing_database_is_file_not_found_and_never_created(tmp_path):
    for opener in (nettune.Store, nettune.results):
        with pytest.raises(FileNotFoundError) as e:
            opener(tmp_path / "typo.db")
        assert "typo.db" in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_not_a_database_is_a_one_line_error(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_text("not sqlite\n")
    with pytest.raises(NettuneError, match="not a nettune results database"):
        nettune.Store(bad)
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    with pytest.raises(NettuneError, match="not a nettune results database"):
        nettune.Store(empty)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_reader_never_writes_an_older_database_it_upgrades_in_memory(tmp_path):
    db = tmp_path / "old.db"
    with StoreWriter(db) as w:
        sid = build(w, "old", [({"streams": 1}, 5.0), ({"streams": 2}, 9.0)])
        w.db.execute("DELETE FROM meta WHERE key='fields_version'")  # as a nettune before the field table left it
        w.db.execute("ALTER TABLE runs DROP COLUMN max_snd_wnd")
        w.db.commit()
        w.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = _digest(db)
    with nettune.Store(db) as s:
        runs = s.runs(sid)
        assert len(runs) == 6 and runs[0].max_snd_wnd is None and runs[0].receiver_bps > 1e9
    assert _digest(db) == before
    assert "max_snd_wnd" not in {r[1] for r in sqlite3.connect(db).execute("PRAGMA table_info(runs)")}


def test_a_reader_may_be_shared_between_threads(tmp_path):
    db = tmp_path / "r.db"
    with StoreWriter(db) as w:
        sid = build(w, "p", [({"streams": 1}, 5.0)])
    store = nettune.Store(db)
    got: list[int] = []
    t = threading.Thread(target=lambda: got.append(len(store.runs(sid))))
    t.start()
    t.join()
    assert got == [3]
    store.close()


# -- the frames --------------------------------------------------------------------------
@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "r.db"
    with StoreWriter(path) as w:
        study_a(w, "A")
        build(w, "P", [({"parallel": p}, g) for p, g in [(1, 5.0), (2, 9.0), (4, 12.0)]], stream_skew=0.3, warmup=1, failed=1)
        build(w, "Q", [({"parallel": p}, g * 1.3) for p, g in [(1, 5.0), (2, 9.0), (4, 12.0)]], stream_skew=0.3)
    return path


def test_runs_is_a_tidy_frame_with_pandas_dtypes_and_units(db):
    res = nettune.results(db)
    df = res.runs("A")
    assert len(df) == 42 and df["run_id"].is_unique
    for p in ("queues", "mult", "streams"):
        assert isinstance(df[p].dtype, pd.CategoricalDtype) and df[p].cat.ordered
    assert list(df["queues"].cat.categories) == [1, 2, 4, 8, 16, 32, 40]
    assert str(df["started"].dtype) == "datetime64[ns, UTC]"
    assert str(df["receiver_bps"].dtype) == "Float64" and str(df["retransmits"].dtype) == "Int64"
    assert df["retransmits"].isna().all()  # an empty numeric column is numeric, not object
    assert str(df["ok"].dtype) == "boolean" and str(df["warmup"].dtype) == "boolean"
    assert not {"cpu_units", "cpu_extra", "tool_cpu", "settings", "intervals"} & set(df.columns)  # unpacked, or series()'s
    assert not [c for c in df.columns if any(isinstance(v, (dict, list)) for v in df[c])]  # no dict or list in a cell
    units = df.attrs["units"]
    assert units["receiver_bps"] == "bit/s" and units["max_cwnd"] == "bytes"
    assert units["cpu_client"] == "% of 1 core" and units["cpu_host"] == "% of 8 cores"  # the machine's cores from its facts
    assert df.attrs["study"] == "A"
    counted = res.runs("P", counted=True)
    assert len(res.runs("P")) == 15 and len(counted) == 9 and counted["ok"].all() and not counted["warmup"].any()


def _run_with(state: PointState, units: dict[str, str] | None = None, cpu: float | None = 40.0) -> Result:
    return Result(engine="iperf3", tool_version="3.16", ok=True, receiver_bps=9e9, sender_bps=9e9, duration=5.0,
                  cpu_client=cpu, cpu_units=units or {}, streams=[StreamResult(id=5, receiver_bps=9e9)],
                  intervals=[Interval(start=0.0, end=1.0, bps=9e9, streams=[IntervalStream(id=5, bps=9e9, cwnd=10, rtt_us=50.0)])])


def test_settings_in_force_are_one_column_each_and_mixed_cpu_units_a_column(tmp_path):
    path = tmp_path / "k.db"
    with StoreWriter(path) as w:
        study = Study.model_validate({"name": "k", "target": {"kind": "local"}, "sweep": {"rmem": [1, 2]}})
        sid = w.begin_study(study, 'name = "k"\n', "k.toml")
        for i, (rmem, cc_b) in enumerate([(6291456, "cubic"), (67108864, "bbr")]):
            pid = w.add_point(sid, i, {"rmem": rmem})
            state = PointState(hosts={"a": HostState(mtu=9000, tx_queues=2), "b": HostState(mtu=9000, tx_queues=4)},
                               knobs={"a": {"sysctl:net.core.rmem_max": rmem, "cc": "cubic"},
                                      "b": {"sysctl:net.core.rmem_max": rmem, "cc": cc_b}})
            w.add_run(sid, pid, 0, False, _run_with(state, {"cpu_client": "pct_of_16" if i else "pct_core"}), state)
        w.finish_study(sid, "done")
    df = nettune.results(path).runs("k")
    assert list(df["knob:sysctl:net.core.rmem_max"]) == [6291456, 67108864]  # the same on both hosts: one column
    assert str(df["knob:sysctl:net.core.rmem_max"].dtype) == "Int64"
    assert list(df["knob:cc@b"]) == ["cubic", "bbr"] and list(df["knob:cc@a"]) == ["cubic", "cubic"]  # differs: per host
    assert list(df["iface:mtu"]) == [9000, 9000] and list(df["iface:tx_queues@b"]) == [4, 4]
    assert list(df["cpu_client_unit"]) == ["% of 1 core", "% of 16 cores"]
    assert df.attrs["units"]["cpu_client"] == "per run: cpu_client_unit"


def test_series_is_long_and_joins_the_streams_and_the_runs(tmp_path):
    path = tmp_path / "s.db"
    with StoreWriter(path) as w:
        study = Study.model_validate({"name": "s", "target": {"kind": "local"}, "sweep": {"streams": [1]}})
        sid = w.begin_study(study, 'name = "s"\n', "s.toml")
        w.add_run(sid, w.add_point(sid, 0, {"streams": 1}), 0, False, _run_with(PointState()), PointState())
    res = nettune.results(path)
    ts = res.series("s")
    assert list(ts.columns[:4]) == ["run_id", "point_idx", "run", "streams"]
    assert {"time", "stream", "direction", "bps", "retransmits", "cwnd", "rtt_us"} <= set(ts.columns)
    row = ts.iloc[0]
    assert row["stream"] == 5 and row["time"] == 1.0 and row["cwnd"] == 10 and row["rtt_us"] == 50.0
    assert str(ts["stream"].dtype) == "Int64" and str(ts["bps"].dtype) == "Float64"
    assert ts.attrs["units"]["bps"] == "bit/s" and ts.attrs["units"]["rtt_us"] == "us"
    assert set(ts["run_id"]) <= set(res.runs("s")["run_id"])
    totals = res.series("s", per="interval")
    assert "stream" not in totals.columns and totals["bps"].iloc[0] == 9e9
    with pytest.raises(ValueError, match="per="):
        res.series("s", per="second")


# -- the analysis and the comparison ------------------------------------------------------
def _numpy_in(obj, path="") -> list[str]:
    if isinstance(obj, (np.generic, np.ndarray)):
        return [path]
    if dataclasses.is_dataclass(obj):
        return [p for f in dataclasses.fields(obj) for p in _numpy_in(obj.__dict__[f.name], f"{path}.{f.name}")]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _numpy_in(v, f"{path}[{k!r}]")]
    if isinstance(obj, (list, tuple)):
        return [p for i, v in enumerate(obj) for p in _numpy_in(v, f"{path}[{i}]")]
    return []


def test_the_analysis_states_one_unit_system_and_holds_plain_python_numbers(db):
    res = nettune.results(db)
    for name in ("A", "P"):
        a = res.analysis(name)
        assert _numpy_in(a) == []
        assert a.unit == "Gbit/s" and a.stored_unit == "bit/s" and a.scale == 1e-9
    a = res.analysis("P")
    runs = res.runs("P", counted=True)
    at4 = runs[runs["parallel"] == 4]["receiver_bps"].astype(float)
    row = next(r for r in a.points if r.point == {"parallel": 4})
    assert row.mean == pytest.approx(at4.mean() * a.scale)
    fair = next(f for f in a.fairness if f.point == {"parallel": 4})
    per_stream = [s["receiver_bps"] for r in res.records("P") if r.ok and not r.warmup and r.point == {"parallel": 4} for s in r.streams]
    assert fair.slowest_gbps == pytest.approx(min(per_stream) / 1e9) and fair.fastest_gbps < row.mean  # Gbit/s, like the row
    pts = a.frame()
    assert isinstance(pts["parallel"].dtype, pd.CategoricalDtype) and pts.attrs["units"]["mean"] == "Gbit/s"
    assert "Analysis('P'" in repr(a) and a.summary and all(f"  {line}" in repr(a) for line in a.summary)
    assert repr(a).count("\n") == len(a.summary)  # the summary, not every headline finding


def test_compare_two_studies_by_name_in_the_analysis_unit(db):
    res = nettune.results(db)
    cmp = res.compare("P", "Q")
    assert (cmp.a, cmp.b, cmp.unit) == ("P", "Q", "Gbit/s")
    assert set(cmp.verdicts) == {"parallel=1", "parallel=2", "parallel=4"} and set(cmp.verdicts.values()) == {"faster"}
    pa = {r.label: r.mean for r in res.analysis("P").points}
    for p in cmp.points:
        assert p.comparison.mean_a == pytest.approx(pa[p.point])
    frame = cmp.frame()
    assert list(frame["verdict"]) == ["faster"] * 3 and (frame["change_pct"] > 20).all()
    assert frame.attrs["units"]["mean_b"] == "Gbit/s"
    one = res.compare("P", "Q", a_where={"parallel": 4}, b_where={"parallel": 4})
    assert [p.point for p in one.points] == [""] and one.points[0].comparison.verdict == "faster"
    with pytest.raises(NettuneError, match="no study 'nope'"):
        res.compare("P", "nope")


def test_studies_is_a_frame_and_an_outcome_names_its_study(db):
    res = nettune.results(db)
    st = res.studies()
    assert list(st["name"]) == ["A", "P", "Q"] and str(st["started"].dtype) == "datetime64[ns, UTC]"
    out = nettune.Outcome(study_id=int(st["id"].iloc[1]), status="done")
    assert res.runs(out).attrs["study"] == "P"


# -- run_study before anything runs ------------------------------------------------------
def test_run_study_reads_text_and_paths_and_refuses_bad_input_first(tmp_path):
    with pytest.raises(SpecError) as e:
        nettune.run_study('name = "x"\n[target]\nkind = "lab"\nhosts = ["a"]\n[workload]\nengine = "iperf4"\n', db=tmp_path / "r.db")
    assert "<text>:6" in str(e.value) and "engine" in str(e.value)
    with pytest.raises(FileNotFoundError):
        nettune.run_study(tmp_path / "missing.toml", db=tmp_path / "r.db")
    with pytest.raises(TypeError, match="study="):
        nettune.run_study(42, db=tmp_path / "r.db")
    with pytest.raises(TypeError, match="db=.*path"):
        nettune.run_study(tmp_path / "missing.toml", db=object())  # an open store, as before
    assert not (tmp_path / "r.db").exists()


def test_the_run_layer_refuses_a_thread_that_runs_an_event_loop(tmp_path):
    from nettune.run.study import run_study as run_into

    study = nettune.parse_study('name = "x"\n[target]\nkind = "local"\n[workload]\nengine = "iperf3"\n')

    async def inside() -> None:
        with StoreWriter(tmp_path / "r.db") as w:
            run_into(study, w)

    with pytest.raises(NettuneError, match="nettune.run_study"):
        asyncio.run(inside())


def test_progress_from_another_thread_is_replayed_in_the_callers():
    from nettune.api.progress import Counting, Relay
    from nettune.plan.points import Point, Slot

    relay, seen = Relay(), []
    study = nettune.parse_study('name = "x"\n[target]\nkind = "local"\n[workload]\nengine = "iperf3"\n')
    slot = Slot(Point(0, {"streams": 2}), 0, False)
    res = Result(engine="iperf3", ok=True, receiver_bps=9.41e9)

    def worker() -> None:
        relay.start(study, 1, 3.0)
        relay.test_start(slot, 0)
        relay.message("a note")
        relay.test_end(slot, res, 1.0)
        relay.eta(0, 0.0)
        relay.finish()

    t = threading.Thread(target=worker)
    t.start()
    into = Counting(lambda u: seen.append((u, threading.current_thread())))
    while relay.pump(into, 0.1):
        pass
    t.join()
    assert [u.event for u, _ in seen] == ["start", "test_start", "message", "test_end", "eta"]
    assert all(th is threading.main_thread() for _, th in seen)
    end = seen[-2][0]
    assert (end.done, end.total, end.point, end.ok) == (1, 1, {"streams": 2}, True)
    assert end.value == "9.41 Gbit/s" and end.text == "streams=2 run 0: 9.41 Gbit/s"


def test_signal_handlers_are_only_installed_in_the_main_thread():
    from nettune.run.study import sigterm_as_interrupt

    errors: list[BaseException] = []

    def body() -> None:
        try:
            with sigterm_as_interrupt():
                pass
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert errors == []


def test_asking_whether_a_port_listens_works_inside_a_cells_event_loop():
    """A local study in a notebook asked sock_diag on the cell's thread: pyroute2 left 16
    'coroutine ... was never awaited' warnings and answered None instead of True."""
    import gc
    import socket
    import warnings

    from nettune.targets.netns_access import port_bound

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()

        async def cell() -> bool | None:
            return port_bound(s.getsockname()[1], "tcp")

        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            answer = asyncio.run(cell())
            gc.collect()
    assert answer is True
    assert [str(w.message) for w in said if issubclass(w.category, RuntimeWarning)] == []
