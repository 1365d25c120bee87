"""[search] on real targets through the real CLI: a tpe search and a peak search on the lab
give a verdict against the defaults with an interval and a p-value; the search's knobs are
journaled and put back like any study's; `persist --best` writes the winner's knobs;
analyze and report read the answer back; kill -9 mid-search then `--resume` continues
without repeating a finished trial; the command engine's search minimises time.

Short on purpose (CI time): UDP at fixed bitrates makes the lab's surface known (the
receiver gets what is sent), 1 s tests, small budgets."""
from __future__ import annotations

import functools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import lab_leftovers, needs_iperf3, needs_root, nettune


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))


def lab_study(name: str, port: int, subnet: str, sweep: str, search: str, knobs: str = "", unit: str = "") -> str:
    return (f'name = "{name}"\n[target]\nkind = "lab"\nsubnet = "{subnet}"\n'
            f'[workload]\nduration = 1\nprotocol = "udp"\nbitrate = "{{rate}}{unit}"\nport = {port}\n'
            f"[sweep]\n{sweep}\n" + (f"[knobs]\n{knobs}\n" if knobs else "") + f"[search]\n{search}\n")


def stored_tests(db: Path, name: str) -> list[tuple]:
    """(point index, run, warm-up, point params) of every stored test of the study."""
    if not db.exists():
        return []
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute("SELECT p.idx, r.run, r.warmup, p.params_json FROM runs r JOIN points p ON p.id=r.point_id"
                           " JOIN studies s ON s.id=r.study_id WHERE s.name=?", (name,)).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


def answer_of(out: str) -> dict[str, str]:
    """The search's answer lines (`key: text`) from `nettune run`'s or `analyze`'s output."""
    text = " ".join(out.split())  # rich wraps lines
    keys = ("search (", "defaults:", "winner:", "verdict:", "drift check:", "peak at", "ablation:")
    found: dict[str, str] = {}
    for k in keys:
        i = text.find(k)
        if i >= 0:
            ends = [j for j in (text.find(k2, i + len(k)) for k2 in keys) if j > i]
            found[k.rstrip(":( ")] = text[i + len(k):min(ends) if ends else len(text)].strip()
    return found


def faster(verdict: str) -> bool:
    """A verdict of the winner against the defaults in the right direction, with its 95%
    interval and p-value: significant, or (a loaded machine's noisy UDP runs) borderline."""
    return (verdict.startswith(("the winner is", "borderline: the winner looks")) and "faster" in verdict
            and "95% CI" in verdict and "p=" in verdict)


@needs_root
@needs_iperf3
def test_tpe_search_on_the_lab_verdict_persist_and_restore(tmp_path):
    name = "nt-search-tpe"
    f = tmp_path / "s.toml"
    f.write_text(lab_study(name, 5291, "198.19.221.0/24", 'rate = ["20M", "40M", "80M"]\nw = [16384, 131072]',
                           'method = "tpe"\nobjective = "receiver"\nbudget = 22\nseed = 3',
                           '"sysctl:net.ipv4.tcp_notsent_lowat" = "{w}"'))
    db = tmp_path / "r.db"
    p = nettune("run", str(f), "--db", str(db), check=True)
    a = answer_of(p.stdout)
    assert a["search"].startswith("tpe, higher receiver is better"), p.stdout
    assert faster(a["verdict"]), p.stdout
    assert "20M" not in a["winner"].split(":")[0], a  # the slowest rate is the defaults, never the winner
    assert a["drift check"] and a["ablation"]
    # the search's knobs were journaled per trial and every change was put back
    recs = [json.loads(x) for x in (tmp_path / "state" / "journal.jsonl").read_text().splitlines()]
    changes = {(r["session"], r["seq"]) for r in recs if r["op"] == "change"}
    done = {(r["session"], r["seq"]): r["result"] for r in recs if r["op"] == "done"}
    assert changes and set(done) == changes and set(done.values()) <= {"restored", "unchanged", "gone"}, done
    assert [r["op"] for r in recs].count("begin") == [r["op"] for r in recs].count("end")
    runs = json.loads(nettune("results", name, "--db", str(db), "--format", "json", check=True).stdout)
    changed = [r for r in runs if r["settings"]["knobs"].get("server", {}).get("sysctl:net.ipv4.tcp_notsent_lowat") is not None]
    assert changed and all(str(r["settings"]["knobs"]["server"]["sysctl:net.ipv4.tcp_notsent_lowat"]) == str(r["point"]["w"])
                           for r in changed)  # every trial ran with its own knob value, journaled
    spent = len([r for r in runs if not r.get("warmup")])
    assert spent <= 22 + 2 * 4  # the budget, and failed tests of the defaults and the end phase run again (at most 2 each)
    # analyze and the report read the answer back from the stored runs
    an = answer_of(nettune("analyze", name, "--db", str(db), check=True).stdout)
    assert an["winner"] == a["winner"] and an["verdict"] == a["verdict"]
    nettune("report", name, "--db", str(db), "--out", str(tmp_path / "rep"), check=True)
    html = next((tmp_path / "rep").glob("*.html")).read_text()
    assert "search" in html.lower() and "best so far" in html.lower()
    # persist --best writes the winner's knobs, applies nothing
    out = tmp_path / "persist"
    pp = nettune("persist", name, "--best", "--db", str(db), "--out", str(out))
    win_w = a["winner"].split("w=")[1].split(":")[0].split(",")[0].strip()
    if win_w.isdigit():
        assert pp.returncode == 0, pp.stdout + pp.stderr
        conf = "".join(x.read_text() for x in out.rglob("*") if x.is_file())
        assert f"net.ipv4.tcp_notsent_lowat = {win_w}" in conf or f"net.ipv4.tcp_notsent_lowat={win_w}" in conf, conf
    else:  # the winner left the knob as found: nothing of it to persist
        assert "tcp_notsent_lowat" not in "".join(x.read_text() for x in out.rglob("*") if x.is_file()) if out.exists() else True
    assert not lab_leftovers()


def _kill_after(p: subprocess.Popen, db: Path, name: str, more: int) -> bool:
    goal = len(stored_tests(db, name)) + more
    while p.poll() is None:
        if len(stored_tests(db, name)) >= goal:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            return True
        time.sleep(0.01)
    return False


def _start_run(tmp_path: Path, f: Path, db: Path, logs: list[str], *extra: str) -> subprocess.Popen:
    """`nettune run F --db DB EXTRA` in the background, its output in a new log named in `logs`."""
    log = open(tmp_path / f"out{len(logs)}.txt", "w")
    logs.append(log.name)
    return subprocess.Popen([sys.executable, "-m", "nettune.cli", "run", str(f), "--db", str(db), *extra],
                            stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, COLUMNS="250"))


@needs_root
@needs_iperf3
def test_peak_search_killed_and_resumed_without_repeating_a_trial(tmp_path):
    name = "nt-search-peak"
    f = tmp_path / "s.toml"
    f.write_text(lab_study(name, 5292, "198.19.222.0/24", "rate = [10, 20, 40, 60, 80, 120]",
                           'method = "peak"\nobjective = "receiver"\nbudget = 22\nseed = 1', unit="M"))
    db = tmp_path / "r.db"
    logs: list[str] = []
    start = functools.partial(_start_run, tmp_path, f, db, logs)

    seen = []
    p = start()
    for more in (3, 3):  # killed twice mid-search, each time right after a test was stored
        assert _kill_after(p, db, name, more), "the search ended before the kill"
        seen.append(set(stored_tests(db, name)))
        p = start("--resume")
    assert p.wait(timeout=240) == 0, "\n".join(Path(x).read_text() for x in logs)
    final = stored_tests(db, name)
    keys = [t[:3] for t in final]
    assert len(keys) == len(set(keys))  # no (point, run) stored twice
    assert seen[0] <= seen[1] <= set(final)  # nothing stored before a kill was lost
    last = Path(logs[-1]).read_text()
    assert "measurements read back from the stored runs; continuing" in last
    a = answer_of(last)
    assert faster(a["verdict"]), last
    assert "peak at rate=" in " ".join(last.split())
    # the resumed search did not measure again what it had: the search phase's configurations
    # were each measured once before the end phase (which measures its three again on purpose)
    firsts = {}
    for idx, run, warm, params in final:
        if not warm:
            firsts.setdefault(idx, []).append(run)
    assert all(sorted(r) == list(range(len(r))) for r in firsts.values())  # runs numbered without gaps or repeats
    assert not lab_leftovers()


def test_command_engine_search_minimises_time(tmp_path):
    name = "nt-search-cmd"
    f = tmp_path / "c.toml"
    f.write_text(f'name = "{name}"\n[target]\nkind = "local"\nhosts = ["local"]\n[workload]\nengine = "command"\n'
                 'run = ["sleep", "{t}"]\n[sweep]\nt = [0.6, 0.4, 0.3, 0.02, 0.5, 0.2]\n'
                 '[search]\nmethod = "tpe"\nbudget = 20\nseed = 2\nconfirm = 3\n')
    db = tmp_path / "r.db"
    p = nettune("run", str(f), "--db", str(db), check=True)
    a = answer_of(p.stdout)
    assert a["search"].startswith("tpe, lower wall"), p.stdout
    assert a["winner"].startswith("t=0.02") or a["winner"].startswith("t=0.2:"), p.stdout
    assert a["verdict"].startswith("the winner is") and "faster" in a["verdict"] and "95% CI" in a["verdict"], p.stdout


@needs_root
def test_resume_continues_the_runs_of_the_defaults_left_as_found(tmp_path):
    # w only sets a knob: the defaults leave it as found and are no grid point (their own
    # point index). Killed after their first run, the resumed search measured "run 0" again,
    # which the runner skipped as stored: phantom failed tests, no end phase, no verdict.
    # (a sysctl of the test's own network namespace: run it isolated, as the lab tests)
    name = "nt-search-resume-defaults"
    f = tmp_path / "c.toml"
    f.write_text(f'name = "{name}"\n[target]\nkind = "local"\nhosts = ["local"]\n[workload]\nengine = "command"\n'
                 'run = ["sleep", "{t}"]\n[sweep]\nt = [0.3, 0.05]\nw = [16384, 65536]\n'
                 '[knobs]\n"sysctl:net.ipv4.tcp_wmem" = "4096 {w} 4194304"\n'
                 '[search]\nmethod = "grid"\nbudget = 30\nseed = 1\nconfirm = 2\n')
    db = tmp_path / "r.db"
    logs: list[str] = []
    start = functools.partial(_start_run, tmp_path, f, db, logs)

    p = start()
    assert _kill_after(p, db, name, 1), "the search ended before the kill"
    p = start("--resume")
    assert p.wait(timeout=120) == 0, "\n".join(Path(x).read_text() for x in logs)
    last = Path(logs[-1]).read_text()
    a = answer_of(last)
    assert "measurements read back" in last and a["verdict"].startswith("the winner is"), last
    assert "no verdict" not in a["verdict"] and "not measured again" not in a["drift check"], last
    defaults = [r for idx, r, warm, params in stored_tests(db, name) if not warm and json.loads(params)["w"] == "default"
                and json.loads(params)["t"] == 0.3]
    assert sorted(defaults) == [0, 1, 2, 3], defaults  # confirm at the start, confirm again at the end
    tests = int(a["search"].split("): ")[1].split(" tests")[0])
    assert tests == len([t for t in stored_tests(db, name) if not t[2]]), last  # no phantom test counted
