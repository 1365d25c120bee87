"""Series leave the database and come back: real iperf3 and iperf2 tests on loopback (TCP,
UDP, -R, --bidir, -P 2, 0.5 s intervals) exported as Parquet (series always), CSV and
JSON with --series, imported again with the same streams and intervals (each interval's
streams keyed by stream id, joinable to the streams table); a study and its re-imported
export give the same `nettune analyze --format json`; the console, the report and the
export number runs alike; idle power and the command and energy columns round-trip."""
from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest

from nettune import parse_study
from nettune.store.writer import StoreWriter
from nettune.run.study import run_study
from nettune.engines.result import TestResult as Result
from nettune.record.fields import EXPORTED
from nettune.studyfile.models import Study

from conftest import needs_iperf2, needs_iperf3, nettune

pytestmark = needs_iperf3

MODES = {"tcp": {}, "udp": {"protocol": "udp", "bitrate": "200M"}, "reverse": {"reverse": True}, "bidir": {"bidir": True},
         "p2": {"parallel": 2}}


def study_text(name: str, engine: str, **wl: object) -> str:
    lines = [f'name = "{name}"', "[target]", 'kind = "local"', "[workload]", f'engine = "{engine}"', "duration = 1", "interval = 0.5"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in wl.items()]
    return "\n".join(lines) + "\n[repeat]\nruns = 1\n"


def same(a: object, b: object) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=0, abs_tol=0)  # type: ignore[arg-type]
    return a == b


@pytest.mark.parametrize("engine", ["iperf3", pytest.param("iperf2", marks=needs_iperf2)])
def test_series_round_trip_through_every_format(tmp_path, engine):
    db = tmp_path / "r.db"
    with StoreWriter(db) as s:
        for mode, opts in MODES.items():
            out = run_study(parse_study(study_text(f"s-{engine}-{mode}", engine, **opts)), s)
            assert out.status == "done" and out.failed == 0, mode
    for mode in MODES:
        name = f"s-{engine}-{mode}"
        with StoreWriter(db) as s:
            [before] = s.runs(s.find_study(name)["id"])
        assert before.intervals and before.streams and all(iv["streams"] for iv in before.intervals), mode
        for fmt, flags in (("parquet", []), ("csv", ["--series"]), ("json", ["--series"])):
            out = tmp_path / f"{mode}.{fmt}"
            nettune("export", name, "--db", str(db), "--format", fmt, "--out", str(out), *flags, check=True)
            back = f"back-{engine}-{mode}-{fmt}"
            nettune("import", str(out), "--study", back, "--db", str(db), check=True)
            with StoreWriter(db) as s:
                [after] = s.runs(s.find_study(back)["id"])
            assert after.streams == before.streams, (mode, fmt)
            assert after.intervals == before.intervals, (mode, fmt)
            diff = {f.name: (f.of(before), f.of(after)) for f in EXPORTED if not same(f.of(before), f.of(after))}
            assert not diff, (mode, fmt, diff)
        # the long tables: every stream of an interval is a stream of the same run and direction
        streams = pd.read_parquet(tmp_path / f"{mode}.streams.parquet")
        per = pd.read_parquet(tmp_path / f"{mode}.stream_intervals.parquet")
        ivs = pd.read_parquet(tmp_path / f"{mode}.intervals.parquet")
        assert per["stream"].notna().all()
        known = set(zip(streams["run_id"], streams["stream"], streams["direction"]))
        assert set(zip(per["run_id"], per["stream"], per["direction"])) <= known
        assert len(ivs) == len(before.intervals) and len(per) == sum(len(iv["streams"]) for iv in before.intervals)
        # the streams add up to the interval's total (iperf3's own sum of a bidir test's reverse
        # direction is taken over a slightly different span: 1e-5 apart measured)
        assert per.groupby(["direction", "start"])["bps"].sum().to_dict() == pytest.approx(
            ivs.set_index(["direction", "start"])["bps"].to_dict(), rel=1e-3)
        if engine == "iperf3" and mode == "tcp":  # the sender's per-stream, per-interval TCP values
            assert per["retransmits"].notna().all() and per["cwnd"].notna().all() and per["snd_wnd"].notna().all()


DERIVED = """name = "nettune-t-same"
[target]
kind = "local"
[workload]
duration = 1
parallel = "{streams}"
[sweep]
q = [1, 2]
m = [1, 2]
streams = "{q} * {m}"
[repeat]
runs = 2
"""


def test_an_imported_export_gives_the_same_analysis(tmp_path):
    db, f = tmp_path / "r.db", tmp_path / "s.toml"
    f.write_text(DERIVED)
    said = nettune("run", str(f), "--db", str(db), "--doctor", "off", check=True).stdout
    for fmt, flags in (("parquet", []), ("csv", ["--series"]), ("json", ["--series"])):
        out = tmp_path / f"e.{fmt}"
        nettune("export", "nettune-t-same", "--db", str(db), "-f", fmt, "-o", str(out), *flags, check=True)
        nettune("import", str(out), "--study", f"back-{fmt}", "--db", str(db), check=True)
    a = json.loads(nettune("analyze", "nettune-t-same", "--db", str(db), "--format", "json", check=True).stdout)
    for fmt in ("parquet", "csv", "json"):
        b = json.loads(nettune("analyze", f"back-{fmt}", "--db", str(db), "--format", "json", check=True).stdout)
        assert b["parameters_swept"] == ["q", "m"]  # streams stays derived from them
        assert {k: v for k, v in b.items() if k not in ("study", "study_id")} == {k: v for k, v in a.items() if k not in ("study", "study_id")}
    with StoreWriter(db) as s:
        first, again = s.runs(s.find_study("nettune-t-same")["id"]), s.runs(s.find_study("back-parquet")["id"])
    assert [r.cpu_units for r in again] == [r.cpu_units for r in first] and "nettune" in first[0].cpu_units
    assert [r.n_streams for r in again] == [r.n_streams for r in first] == [1, 2, 2, 4] * 2
    # run numbers: the console's "run N" lines are the export's `run` column
    shown = sorted(int(m.group(1)) for m in re.finditer(r"^  q=\d, m=\d, streams=\d run (\d+): [\d.]+ Gbit/s$", said, re.M))
    exported = sorted(r["run"] for r in json.loads((tmp_path / "e.json").read_text()))
    assert shown == exported == [0, 0, 0, 0, 1, 1, 1, 1]


def test_idle_power_command_and_energy_columns_round_trip(tmp_path):
    """No meter or RAPL here: a stored study with those values (as the probes write them)."""
    db = tmp_path / "r.db"
    with StoreWriter(db) as s:
        sid = s.begin_study(Study.model_validate({"name": "c", "target": {"kind": "local"}, "workload": {"engine": "command", "run": "true"},
                                                  "sweep": {"x": [1, 2]}}), 'name = "c"\n', "c.toml")
        for i in range(2):
            pid = s.add_point(sid, i, {"x": i + 1})
            s.add_idle(sid, pid, "machine", {"seconds": 2.0, "powercap": {"min_w": 10.0 + i, "median_w": 11.0, "samples": 2},
                                            "meter": {"why": "plug offline"}})
            for run in range(2):
                s.add_run(sid, pid, run, False, Result(engine="command", tool_version="sh", protocol="", duration=1.5 + i, extra={
                    "command": {"host": "local", "wall_s": 1.5 + i, "cpu_s": 1.25, "cpu_user_s": 1.0, "cpu_sys_s": 0.25,
                                "peak_rss_kb": 2048, "exit_code": 0, "timed_out": False},
                    "energy": {"machine": {"joules": {"package-0": 30.0 + run, "dram": 2.0}, "watts": 21.5},
                               "meter": {"watts": 95.5, "joules": 143.25, "min_w": 95.0, "max_w": 96.0, "samples": 2}}}))
        before, idle = s.runs(sid), s.idle(sid)
    for fmt, flags in (("parquet", []), ("csv", ["--series"]), ("json", ["--series"])):
        out = tmp_path / f"c.{fmt}"
        nettune("export", "c", "--db", str(db), "-f", fmt, "-o", str(out), *flags, check=True)
        if fmt == "parquet":  # every command and energy column, with its unit; the idle power's too
            df, idle_df = pd.read_parquet(out), pd.read_parquet(tmp_path / "c.idle_power.parquet")
            assert {"wall_s", "cpu_s", "cpu_user_s", "cpu_sys_s", "peak_rss_kb", "exit_code", "energy_j", "power_w", "meter_j", "meter_w",
                    "energy_why"} <= set(df.columns)
            assert (df.attrs["units"]["wall_s"], df.attrs["units"]["peak_rss_kb"], df.attrs["units"]["energy_j"]) == ("s", "KiB", "J")
            assert idle_df.attrs["units"]["min_w"] == "W" and len(idle_df) == 4  # 2 points x (powercap, meter)
        assert json.loads((tmp_path / "c.study.json").read_text())["units"]["meter_w"] == "W"
        nettune("import", str(out), "--study", f"c-{fmt}", "--db", str(db), check=True)
        with StoreWriter(db) as s:
            sid2 = s.find_study(f"c-{fmt}")["id"]
            after, idle2 = s.runs(sid2), s.idle(sid2)
        for a, b in zip(before, after):
            diff = {f.name: (f.of(a), f.of(b)) for f in EXPORTED if not same(f.of(a), f.of(b))}
            assert not diff, (fmt, diff)
        strip = lambda rows: [{k: v for k, v in r.items() if k not in ("id", "study_id", "point_id")} for r in rows]  # noqa: E731
        assert strip(idle2) == strip(idle), fmt
    assert before[0].energy_j == 32.0 and before[0].meter_j == 143.25 and idle[0]["min_w"] == 10.0


def test_companion_files_alone_are_refused(tmp_path):
    db = tmp_path / "r.db"
    with StoreWriter(db) as s:
        sid = s.begin_study(Study.model_validate({"name": "one", "target": {"kind": "local"}}), 'name = "one"\n', "one.toml")
        s.add_run(sid, s.add_point(sid, 0, {}), 0, False, Result(engine="iperf3", receiver_bps=1e9, sender_bps=1e9))
    nettune("export", "one", "--db", str(db), "-f", "csv", "-o", str(tmp_path / "one.csv"), "--series", check=True)
    study = tmp_path / "one.study.json"
    assert json.loads(study.read_text())["name"] == "one" and not (tmp_path / "one.intervals.csv").exists()  # no rows: no file
    p = nettune("import", str(study), "--study", "x", "--db", str(db))
    assert p.returncode == 2 and "one.csv" in p.stderr and p.stderr.count("\n") == 1
    p = nettune("export", "one", "--db", str(db), "-f", "csv", "--series")
    assert p.returncode == 2 and "--out" in p.stderr
    ok = nettune("import", str(tmp_path / "one.csv"), str(study), "--study", "x", "--db", str(db), check=True)
    assert "from 1 export file" in ok.stdout
