"""Energy and power as real columns: a command study on the sandbox target (its /sys a
directory tree holding powercap zones whose counters the run itself advances, one of
them wrapping), an external meter (a small script printing watts) sampled during each
run and each idle window, the idle-power verdict, the reason on a host without
counters, and the additive upgrade of a schema-3 database."""
from __future__ import annotations

import re
import sqlite3

import pytest

from nettune import parse_study
from nettune.store.schema import SCHEMA_VERSION
from nettune.store.writer import StoreWriter
from nettune.run.study import run_study
from nettune.analysis.analyze import analyze
from nettune.analysis.data import load
from nettune.targets.sandbox import seed_tree

PC = "sys/class/powercap/"
WRAP = 10_000_000  # a small max_energy_range_uj, so the second run's counter wraps


@pytest.fixture
def tree(tmp_path, monkeypatch):
    root = tmp_path / "tree"
    seed_tree(root / "local")
    for d, name in {"intel-rapl:0": "package-0", "intel-rapl:0:1": "dram", "intel-rapl:0:0": "core"}.items():
        z = root / "local" / PC / d
        z.mkdir(parents=True)
        (z / "name").write_text(name + "\n")
        (z / "max_energy_range_uj").write_text(f"{WRAP}\n")
        (z / "energy_uj").write_text("1000000\n")
    monkeypatch.setenv("NETTUNE_SANDBOX", str(root))
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))
    return root / "local"


def meter_script(tmp_path):
    """A smart plug stand-in: 100 W while point x=2 is in force, 20 W otherwise, +0..2 W of noise."""
    m = tmp_path / "plug-watts"
    m.write_text(f'#!/bin/sh\nn=$(cat {tmp_path}/n 2>/dev/null || echo 0)\necho $((n + 1)) > {tmp_path}/n\n'
                 f'if [ "$(cat {tmp_path}/point)" = 2 ]; then echo "$((100 + n % 3)) W"; else echo "$((20 + n % 3)).0"; fi\n')
    m.chmod(0o755)
    return m


def study(tmp_path, tree, probes: str) -> str:
    pkg, dram = tree / PC / "intel-rapl:0/energy_uj", tree / PC / "intel-rapl:0:1/energy_uj"
    # the run advances the counters: 7 J of package (wrapping at WRAP), 0.5 J of DRAM; core is never summed
    run = (f'v=$(cat {pkg}); echo $(( (v + 7000000) % {WRAP} )) > {pkg}; w=$(cat {dram}); echo $((w + 500000)) > {dram}; '
           f'echo 99999999 > {tree / PC / "intel-rapl:0:0/energy_uj"}; sleep {{t}}')
    return ('name = "nettune-t-energy"\n[target]\nkind = "local"\nhosts = ["local"]\n[workload]\nengine = "command"\n'
            f'setup = "echo {{x}} > {tmp_path}/point"\nrun = "{run}"\n[sweep]\nx = [1, 2]\nt = "(3 - {{x}}) / 5"\n'
            f'[repeat]\nruns = 2\n[probes]\n{probes}\n')


def test_joules_watts_meter_and_idle_power(tmp_path, tree):
    text = study(tmp_path, tree, f'idle_power = 2\npower_command = ["{meter_script(tmp_path)}"]')
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(parse_study(text), store)
        runs = store.runs(out.study_id)
        idle = store.idle(out.study_id)
        a = analyze(load(store, out.study_id))
    assert out.status == "done" and out.failed == 0 and len(runs) == 4
    for r in runs:
        assert r.energy_j == pytest.approx(7.5)  # package 7 J (one of them across the wrap) + DRAM 0.5 J
        assert r.extra["energy"]["machine"]["joules"] == {"package-0": pytest.approx(7.0), "dram": pytest.approx(0.5)}
        # powercap reads its counters around the helper that starts the command: a window a little longer than the run
        assert 7.5 / (r.wall_s + 1.0) < r.power_w <= 7.5 / r.wall_s and r.energy_why is None
        lo = 100 if r.point["x"] == 2 else 20
        assert lo <= r.meter_w <= lo + 2 and r.meter_j == pytest.approx(r.meter_w * r.wall_s, rel=0.5)
    # one idle window per point, after its first counted run: powercap (counters idle: 0 W) and the meter
    assert sorted((i["point_idx"], i["source"]) for i in idle) == [(0, "meter"), (0, "powercap"), (1, "meter"), (1, "powercap")]
    for i in idle:
        if i["source"] == "meter":
            lo = 100 if i["point_idx"] == 1 else 20
            assert lo <= i["min_w"] <= i["median_w"] <= lo + 2 and i["samples"] >= 2
        else:
            assert i["min_w"] == 0 and i["samples"] >= 1
    text = "\n".join(a.findings)
    assert "least energy per run" in text and "7.50 J" in text
    # the meter adds 0..2 W of noise per sample, so each point's idle minimum is lo..lo+2 W
    m = re.search(r"x=2, t=0\.2 is \d+% faster than x=1, t=0\.4 but idles (\d+\.\d) W higher", text)
    assert m and 78.0 <= float(m.group(1)) <= 82.0, text


def test_a_meter_that_fails_says_why(tmp_path, tree):
    bad = tmp_path / "bad-meter"
    bad.write_text("#!/bin/sh\necho 'plug offline' >&2\nexit 2\n")
    bad.chmod(0o755)
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(parse_study(study(tmp_path, tree, f'power_command = ["{bad}"]')), store)
        runs = store.runs(out.study_id)
    assert out.failed == 0 and all(r.meter_w is None and "plug offline" in r.energy_why for r in runs)
    assert all(r.energy_j == pytest.approx(7.5) for r in runs)  # powercap still measured


def test_no_powercap_gives_an_empty_column_and_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    text = 'name = "nettune-t-noenergy"\n[target]\nkind = "local"\nhosts = ["local"]\n[workload]\nengine = "command"\nrun = ["true"]\n'
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(parse_study(text), store)
        r = store.runs(out.study_id)[0]
        a = analyze(load(store, out.study_id))
    if r.energy_j is None:  # this VM: no zones (or not root); the reason is stored and said
        assert r.power_w is None and r.energy_why.startswith("machine: ") and any(f.startswith("no energy per run") for f in a.findings)
    else:
        assert r.energy_j >= 0 and r.energy_why is None


def test_schema_3_database_gets_the_columns_filled_from_extra(tmp_path, tree):
    db = tmp_path / "r.db"
    with StoreWriter(db) as store:
        out = run_study(parse_study(study(tmp_path, tree, "")), store)
    con = sqlite3.connect(db)  # make it a schema-3 database: without the columns, the table, the version
    for col in ("wall_s", "cpu_s", "cpu_user_s", "cpu_sys_s", "peak_rss_kb", "exit_code", "energy_j", "power_w", "meter_j", "meter_w", "energy_why"):
        con.execute(f"ALTER TABLE runs DROP COLUMN {col}")
    con.execute("DROP TABLE idle_power")
    con.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    con.commit()
    con.close()
    with StoreWriter(db) as store:
        runs = store.runs(out.study_id)
        assert store.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)  # upgraded to the current schema
        assert store.idle(out.study_id) == []
    assert all(r.wall_s and r.energy_j == pytest.approx(7.5) and r.exit_code == 0 for r in runs)


def test_gbits_per_watt_for_a_network_study():
    from nettune.analysis.data import METRICS, PointData, StudyData
    from nettune.analysis.energy_verdicts import energy_findings
    from nettune.store.records import RunRecord

    def rec(i: int, p: int, gbps: float, watts: float) -> RunRecord:
        return RunRecord(id=i, study_id=1, point_id=p, run=i, warmup=False, ok=True, error=None, engine="iperf3", tool_version="3.12",
                         protocol="tcp", started=0.0, duration=10.0, receiver_bps=gbps * 1e9, power_w=watts, energy_j=watts * 10,
                         point_idx=p, point={"streams": p})
    pts = [PointData(1, {"streams": 1}, [rec(1, 1, 10, 100), rec(2, 1, 10, 100)]),
           PointData(4, {"streams": 4}, [rec(3, 4, 30, 120), rec(4, 4, 30, 120)])]
    data = StudyData({"id": 1, "name": "x", "idle": []}, pts, {}, ["streams"], [])
    out = energy_findings(data, METRICS["total"], ["streams"])
    assert out == ["best Gbit/s per watt at streams=4: 0.250 (120 W, 1200 J per test, powercap)"]
