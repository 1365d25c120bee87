"""Study C measured right (issue 31): a timed command's peak memory without nettune's own
size in it, energy per run as a metric like any other (analyze, compare, check, report,
with the real cause when it is missing), meter readings dated and integrated over the
run's own window, sequential order kept with adaptive repeats, and study C in miniature
end to end (two configurations, adaptive repeats, a fake meter with known watts and a
delay) checked against the truth."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats as sst

from conftest import nettune
from nettune import parse_study
from nettune.run.study import run_study
from nettune.analysis.analyze import analyze
from nettune.analysis.compare import within_study
from nettune.analysis.data import load
from nettune.analysis.energy_verdicts import point_energy
from nettune.analysis.intervals import log_t_interval
from nettune.errors import NettuneError
from nettune.importers.nettune_export import import_exports, read_exports
from nettune.plan.points import expand_and_check
from nettune.plan.run_order import run_groups, run_order
from nettune.probes import power_command
from nettune.probes.power_command import Reading, Sampler, integrate, meter_summary
from nettune.record.fields import EXPORTED
from nettune.report.workload_section import workload_rows
from nettune.store.writer import StoreWriter

MIB = 1024  # KiB


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))


def command_study(name: str, workload: str, sweep: str = "", repeat: str = "", probes: str = "") -> str:
    return (f'name = "{name}"\n[target]\nkind = "local"\nhosts = ["local"]\n[workload]\nengine = "command"\n{workload}\n'
            + (f"[sweep]\n{sweep}\n" if sweep else "") + (f"[repeat]\n{repeat}\n" if repeat else "")
            + (f"[probes]\n{probes}\n" if probes else ""))


# -- peak memory of the command itself ------------------------------------------------

def test_peak_rss_is_the_commands_own_not_nettunes(tmp_path):
    """dd with a 1 MiB buffer reads 1 to 4 MiB, as /usr/bin/time says (it read ~132 MiB:
    nettune's own size, inherited through fork and exec), and with a 300 MiB buffer within
    5%, with the method stored beside the value."""
    text = command_study("nettune-t-peak", 'run = ["dd", "if=/dev/zero", "of=/dev/null", "bs={mib}M", "count=1", "status=none"]', "mib = [1, 300]")
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(parse_study(text), store)
        runs = {r.point["mib"]: r for r in store.runs(out.study_id)}
    assert out.status == "done" and out.failed == 0, [(r.error, r.extra.get("command")) for r in runs.values() if not r.ok]
    assert 1 * MIB <= runs[1].peak_rss_kb <= 4 * MIB, runs[1].peak_rss_kb
    assert abs(runs[300].peak_rss_kb - 300 * MIB) <= 0.05 * 300 * MIB, runs[300].peak_rss_kb
    assert {r.peak_rss_method for r in runs.values()} == {"rusage-time"}  # GNU time is installed by scripts/env.sh
    assert all(r.cpu_s is not None and r.wall_s > 0 for r in runs.values())


def test_without_gnu_time_the_helper_measures_and_a_killed_command_dies_the_same_way(tmp_path):
    """The helper alone (no GNU time at the path given): the floor is its own few MiB, never
    nettune's; exit codes, signals and the command's stderr come through unchanged."""
    import subprocess
    import sys

    from nettune.engines.rss_helper import take_report, wrapped

    def run(argv: list[str], gnu: str) -> tuple[int, object, str]:
        p = subprocess.run(wrapped(sys.executable, argv, gnu), capture_output=True, text=True)
        return (p.returncode, *take_report(p.stderr))

    code, report, err = run(["dd", "if=/dev/zero", "of=/dev/null", "bs=1M", "count=1", "status=none"], str(tmp_path / "no-time"))
    assert code == 0 and err == "" and report.method == "rusage-helper" and 1 * MIB <= report.max_rss_kb < 20 * MIB
    for gnu in ("/usr/bin/time", str(tmp_path / "no-time")):
        code, report, err = run(["sh", "-c", "echo oops >&2; kill -9 $$"], gnu)
        assert code == -9 and err == "oops\n" and report is not None, (gnu, code, err)
        assert run(["sh", "-c", "exit 3"], gnu)[0] == 3
        code, report, err = run(["no-such-program-here"], gnu)
        assert code == 127 and err == "no-such-program-here: No such file or directory\n" and report is not None


def test_peak_rss_on_a_host_without_python_says_why(tmp_path):
    from nettune.run.command_driver import peak_helper

    class NoPython:  # an ssh host whose `command -v python3` finds nothing
        name, on_this_machine = "epyc", False

        def which(self, tool: str) -> str | None:
            return None

    python, why = peak_helper(NoPython())  # type: ignore[arg-type]
    assert python is None and why == ("not measured: no python3 on epyc (the helper that keeps nettune's size out of the "
                                      "peak needs it)")


# -- meter readings, dated ------------------------------------------------------------

def readings(*pairs: tuple[float, float]) -> list[Reading]:
    return [Reading(t, w, 0.2) for t, w in pairs]


def test_energy_is_integrated_over_the_runs_window_and_late_readings_are_left_out():
    # 100 W during the run [0, 1.046]; the meter answers in 0.2 s, so the reading asked at
    # 1.0 s is dated 1.1 s, after the end, and reads the idle 20 W: it is never counted
    rs = readings((0.1, 100.0), (0.35, 100.0), (0.6, 100.0), (0.85, 100.0), (1.1, 20.0))
    joules, used = integrate(rs, 0.0, 1.046)
    assert joules == pytest.approx(104.6) and used == 4
    # a power that changes inside: the trapezoid over the readings, the edges held at the nearest one inside
    joules, _ = integrate(readings((-0.05, 20.0), (0.25, 100.0), (0.75, 200.0)), 0.0, 1.0)
    assert joules == pytest.approx(100 * 0.25 + 150 * 0.5 + 200 * 0.25)
    assert integrate(readings((1.2, 100.0)), 0.0, 1.0) is None  # nothing dated before the end


def sampler(rs: list[Reading], t0: float, t1: float, interval: float = 1.0) -> Sampler:
    s = Sampler(["true"], interval)
    s.readings, s.t0, s.t1 = rs, t0, t1
    return s


def test_the_summary_says_watts_are_joules_over_seconds_and_flags_a_short_run():
    s = sampler(readings((0.1, 90.0), (1.1, 110.0), (2.1, 100.0), (3.1, 20.0)), 0.0, 3.0)
    out = meter_summary(s, (0.0, 3.0))
    assert out["joules"] == pytest.approx(0.1 * 90 + 100 * 1.0 + 105 * 1.0 + 0.9 * 100)
    assert out["watts"] == pytest.approx(out["joules"] / 3.0, rel=1e-4) and out["late"] == 1 and out["samples"] == 3
    assert "too_short" not in out  # three meter intervals
    short = meter_summary(sampler(readings((0.1, 100.0)), 0.0, 0.5), (0.0, 0.5))
    assert short["joules"] == pytest.approx(50.0) and "shorter than 3 meter intervals" in short["too_short"]
    late = meter_summary(sampler(readings((0.4, 100.0)), 0.0, 0.3), (0.0, 0.3))
    assert "too short to meter" in late["why"] and "joules" not in late


# -- sequential means sequential --------------------------------------------------------

def test_sequential_groups_are_one_configuration_each():
    """Sequential: one group per point (the run finishes a group, its adaptive runs too,
    before the next); interleaved: one group, its points in rounds."""
    seq = parse_study(command_study("nettune-t-order", 'run = ["true"]', "s = [1, 2, 3]", "order = \"sequential\"\nmin_runs = 2\nmax_runs = 4\n"
                                    "target_margin = 0.01\nwarmup = 1"))
    groups = run_groups(seq, expand_and_check(seq, "", "<t>"))
    assert [{s.point.index for s in g} for g in groups] == [{0}, {1}, {2}]
    assert [(s.point.index, s.run, s.warmup) for s in groups[0]] == [(0, 0, True), (0, 1, False), (0, 2, False)]
    inter = parse_study(command_study("nettune-t-order", 'run = ["true"]', "s = [1, 2]", "min_runs = 2\nmax_runs = 4\ntarget_margin = 0.01"))
    groups = run_groups(inter, expand_and_check(inter, "", "<t>"))
    assert len(groups) == 1  # no costly knob: one group, its points interleaved
    assert [(s.point.index, s.run) for s in run_order(inter, expand_and_check(inter, "", "<t>"))] == [(0, 0), (1, 0), (0, 1), (1, 1)]


def test_sequential_with_adaptive_repeats_finishes_a_configuration_before_the_next(tmp_path):
    text = command_study("nettune-t-seq", 'run = ["sleep", "{s}"]', "s = [0.05, 0.1]",
                         'order = "sequential"\nmin_runs = 2\nmax_runs = 4\ntarget_margin = 0.000001')
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(parse_study(text), store)
        runs = sorted(store.runs(out.study_id), key=lambda r: r.id)  # ids in the order the runs were stored
    assert out.status == "done"
    assert [(r.point["s"], r.run) for r in runs] == [(0.05, 0), (0.05, 1), (0.05, 2), (0.05, 3), (0.1, 0), (0.1, 1), (0.1, 2), (0.1, 3)]


# -- study C in miniature ----------------------------------------------------------------

WATTS, IDLE = 100.0, 20.0


def fake_plug(tmp_path: Path) -> tuple[Path, Path]:
    """A smart plug: 100 W while the build runs (the flag file exists), 20 W idle, read when
    asked and answered 0.2 s later (its delay)."""
    busy = tmp_path / "busy"
    plug = tmp_path / "plug-watts"
    plug.write_text(f'#!/bin/sh\nif [ -e {busy} ]; then w={WATTS:g}; else w={IDLE:g}; fi\nsleep 0.2\necho "$w W"\n')
    plug.chmod(0o755)
    return plug, busy


def test_study_c_in_miniature(tmp_path, monkeypatch):
    """Two configurations, adaptive repeats, sequential order, a fake meter with known watts
    and a delay: build time with a t-based margin, the command's peak memory, joules per
    build and watts within 2% of the truth, compare and check on energy, every field exported."""
    tree = tmp_path / "tree"
    monkeypatch.setenv("NETTUNE_SANDBOX", str(tree))  # a machine without powercap: the meter is the only energy
    monkeypatch.setattr(power_command, "INTERVAL", 0.25)  # a reading every 0.25 s: a 1 s build has four
    plug, busy = fake_plug(tmp_path)
    text = command_study("nettune-t-study-c", f'setup = ["touch", "{busy}"]\nrun = "sleep {{secs}}; rm -f {busy}"', "secs = [1.0, 1.3]",
                         'order = "sequential"\nmin_runs = 3\nmax_runs = 5\ntarget_margin = 0.02',
                         f'power_command = ["{plug}"]\nidle_power = 1')
    db = tmp_path / "c.db"
    with StoreWriter(db) as store:
        out = run_study(parse_study(text), store)
        runs = sorted(store.runs(out.study_id), key=lambda r: r.id)
        data = load(store, out.study_id)
    assert out.status == "done" and out.failed == 0, [(r.error, r.extra.get("command")) for r in runs if not r.ok]
    # sequential: every run of a configuration before the next configuration is applied
    order = [r.point["secs"] for r in runs]
    assert order == sorted(order, key=[1.0, 1.3].index) and 6 <= len(runs) <= 10
    # build time: the runs stop on the Student-t margin of the wall seconds, as the author's did
    a = analyze(data)
    assert a.metric == "wall" and not a.higher_is_better
    for row, p in zip(a.points, data.points):
        walls = [r.wall_s for r in p.counted]
        t_half = sst.t.ppf(0.975, len(walls) - 1) * sst.tstd(walls) / math.sqrt(len(walls))
        assert row.n == len(walls) and (len(walls) == 5 or t_half <= 0.02 * sst.tmean(walls))  # stopped at the margin or max_runs
        if row.interval == "t":
            assert row.half_width == pytest.approx(t_half)
        else:  # sleep's seconds on a busy machine can be right-skewed: analyze then says so and uses log-scale t (docs/analysis.md)
            lo, hi = log_t_interval(walls, 0.95)
            assert row.interval == "log-t" and row.half_width == pytest.approx((hi - lo) / 2)
    # peak memory of the command (a shell and sleep), not nettune's
    assert all(r.peak_rss_kb < 4 * MIB and r.peak_rss_method == "rusage-time" for r in runs)
    # joules per build and watts: the truth is 100 W for the run's own seconds
    for r in runs:
        assert r.meter_j == pytest.approx(WATTS * r.wall_s, rel=0.02) and r.meter_w == pytest.approx(WATTS, rel=0.02), r
        assert r.energy_note is None and r.energy_j is None and "no powercap" in r.energy_why
    for p in data.points:
        (e,) = point_energy(p)
        mean_wall = sum(r.wall_s for r in p.counted) / len(p.counted)
        assert e.source == "meter" and e.joules == pytest.approx(WATTS * mean_wall, rel=0.02) and e.watts == pytest.approx(WATTS, rel=0.02)
        assert e.joules_ci is not None and e.joules_ci > 0
    assert all(i["min_w"] == IDLE for i in data.study["idle"] if i["source"] == "meter")
    # the report's table, as the author's: joules per build with its margin, watts and idle watts per configuration
    head, rows = workload_rows(data)
    for row, p in zip(rows, data.points):
        got = dict(zip(head, row))
        mean_wall = sum(r.wall_s for r in p.counted) / len(p.counted)
        assert float(got["J per run"]) == pytest.approx(WATTS * mean_wall, rel=0.02) and float(got["± J"]) > 0
        assert float(got["W"]) == pytest.approx(WATTS, rel=0.02) and got["energy from"] == "meter" and float(got["idle W"]) == IDLE
    assert any(f.startswith("least energy per run at secs=1") and "(meter)" in f for f in a.findings), a.findings
    # compare and check on energy, from the CLI
    r = nettune("compare", "nettune-t-study-c", "--db", str(db), "--a", "secs=1", "--b", "secs=1.3", "--metric", "meter_j", check=True)
    assert "b is " in r.stdout and "% worse (95% CI" in r.stdout
    r = nettune("compare", "nettune-t-study-c", "--db", str(db), "--a", "secs=1", "--b", "secs=1.3", "--metric", "energy")
    assert r.returncode != 0 and "no powercap" in r.stderr and "--metric meter_j" in r.stderr and "0 counted runs" not in r.stderr
    r = nettune("analyze", "nettune-t-study-c", "--db", str(db), check=True)
    assert "J per run (meter)" in r.stdout and "W (meter)" in r.stdout
    exported = tmp_path / "c.csv"
    nettune("export", "nettune-t-study-c", "--db", str(db), "--format", "csv", "--out", str(exported), check=True)
    r = nettune("check", "nettune-t-study-c", "--db", str(db), "--baseline", str(exported), "--metric", "meter_j", "--tolerance", "5%",
                "--format", "json", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["verdict"] == "pass"
    # the export carries every field, and reading it back restores them
    header = exported.read_text().splitlines()[0].split(",")
    assert all(f.name in header for f in EXPORTED)
    with StoreWriter(tmp_path / "back.db") as store:
        import_exports(store, read_exports([exported]), "back")
        back = sorted(store.runs(load(store, "back").study["id"]), key=lambda r: (r.point_idx, r.run))
    mine = sorted(runs, key=lambda r: (r.point_idx, r.run))
    for f in EXPORTED:
        if f.group in ("command", "energy"):
            got, want = [f.of(r) for r in back], [f.of(r) for r in mine]
            assert got == pytest.approx(want) if f.type is float else got == want, f.name


def test_a_missing_energy_metric_names_its_cause(tmp_path):
    """--metric energy on runs without powercap: the reason the machine gave and the metrics
    that were measured, never "0 counted runs" or "no successful counted run"."""
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(parse_study(command_study("nettune-t-noenergy", 'run = ["sleep", "{s}"]', "s = [0.01, 0.02]", "runs = 2")), store)
        data = load(store, out.study_id)
    if any(r.energy_j is not None for r in data.runs):
        pytest.skip("this machine's powercap counters are readable")
    for call in (lambda: analyze(data, "energy"), lambda: within_study(data, {"s": "0.01"}, {"s": "0.02"}, "energy_j")):
        with pytest.raises(NettuneError, match=r"none of its 4 counted runs has energy \(RAPL joules per run\): machine: "):
            call()
    with pytest.raises(NettuneError, match=r"wall is measured by command workloads"):
        from nettune.analysis.data import METRICS, why_missing

        raise NettuneError(why_missing([r.model_copy(update={"engine": "iperf3"}) for r in data.runs], METRICS["wall"], "x"))
