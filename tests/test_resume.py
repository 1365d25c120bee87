"""`nettune run FILE --resume` after kill -9 at random moments, with the real CLI.

Each study is started, killed with SIGKILL at least three times (right after a test was
committed, and at a random moment of a resumed run: setting up, restoring, testing), and
resumed until done. Then every expected (point, run, warm-up[, pair]) is stored exactly
once in one study, no test stored before a kill was lost or stored again, every test
succeeded (a dead run's iperf3 server would make a test fail with "port in use"), and
nothing of ours is left on the machine. Seeded: NETTUNE_RESUME_SEED=N replays a run.
"""
import fcntl
import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyroute2 import netns

from conftest import lab_leftovers, needs_iperf3, needs_root, nettune

pytestmark = [needs_root, needs_iperf3]

SUBNET = "198.19.213.0/24"
SEED = int(os.environ.get("NETTUNE_RESUME_SEED", time.time()))
PORTS = "-p 523"  # every study here uses a port 523x: how our iperf3 processes are told apart
BACKLOG = Path("/proc/sys/net/core/netdev_max_backlog")


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    """Journal and run state of this test only (the CLI subprocesses inherit them)."""
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))


@pytest.fixture()
def hostwide_values():
    """The knob study changes a host-wide sysctl: never alongside the other tests that do."""
    path = "/run/lock/nettune-tests-hostwide.lock" if os.path.isdir("/run/lock") else "/tmp/nettune-tests-hostwide.lock"
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


class Runner:
    """Starts `nettune run` in a subprocess and kills it with SIGKILL."""

    def __init__(self, tmp_path: Path, name: str, text: str):
        self.name, self.dir = name, tmp_path
        self.file = tmp_path / f"{name}.toml"
        self.file.write_text(text)
        self.db = tmp_path / "r.db"
        self.pids: list[int] = []
        self.logs: list[Path] = []

    def start(self, *args: str) -> subprocess.Popen:
        log = self.dir / f"out{len(self.logs)}.txt"
        self.logs.append(log)
        with open(log, "w") as out:
            p = subprocess.Popen([sys.executable, "-m", "nettune.cli", "run", str(self.file), "--db", str(self.db), *args],
                                 stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ, COLUMNS="200"))
        self.pids.append(p.pid)
        return p

    def output(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text()}" for log in self.logs)

    def kill_after_commit(self, p: subprocess.Popen, more: int) -> bool:
        """SIGKILL the moment `more` further tests are committed; False if it ended first."""
        goal = len(stored(self.db, self.name)) + more
        while p.poll() is None:
            if len(stored(self.db, self.name)) >= goal:
                return _kill(p)
            time.sleep(0.01)
        return False

    def kill_after(self, p: subprocess.Popen, seconds: float) -> bool:
        try:
            p.wait(timeout=seconds)
            return False
        except subprocess.TimeoutExpired:
            return _kill(p)


def study(name: str, kind: str, port: int, rest: str, target: str = "", workload: str = "", duration: int = 1) -> str:
    """A study file: `target`/`workload` lines added to those sections, `rest` after them."""
    lab = f'subnet = "{SUBNET}"\n' if kind == "lab" else ""
    return (f'name = "{name}"\n[target]\nkind = "{kind}"\n{lab}{target}'
            f"[workload]\nduration = {duration}\nport = {port}\n{workload}{rest}")


def _kill(p: subprocess.Popen) -> bool:
    """SIGKILL, unless it has ended by itself already (then False)."""
    if p.poll() is not None:
        return False
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    return True


def stored(db: Path, name: str) -> dict[int, tuple]:
    """run id -> (point index, run, warm-up, pair, ok) of every test of studies named `name`."""
    if not db.exists():
        return {}
    con = sqlite3.connect(db, timeout=30)
    try:
        rows = con.execute(
            "SELECT r.id, p.idx, r.run, r.warmup, r.extra_json, r.ok FROM runs r JOIN points p ON p.id=r.point_id"
            " JOIN studies s ON s.id=r.study_id WHERE s.name=?", (name,)).fetchall()
    except sqlite3.OperationalError:  # the first run has not created the tables yet
        return {}
    finally:
        con.close()
    return {r[0]: (r[1], r[2], bool(r[3]), json.loads(r[4]).get("pair"), bool(r[5])) for r in rows}


def studies(db: Path, name: str) -> list[tuple]:
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute("SELECT id, status FROM studies WHERE name=?", (name,)).fetchall()
    finally:
        con.close()


def kill_and_resume(r: Runner, rng: random.Random, kills: int = 3, after_kill=None, before_resume=None) -> list[dict[int, tuple]]:
    """First run killed right after a commit; then resumed runs killed at random moments or
    right after a commit; then resumed until done. Returns what was stored at each kill."""
    seen: list[dict[int, tuple]] = []
    p = r.start()
    assert r.kill_after_commit(p, rng.randint(1, 2)), r.output()
    for i in range(kills):
        now = stored(r.db, r.name)
        keys = [k[:4] for k in now.values()]
        assert len(keys) == len(set(keys)), f"a test stored twice after kill {i} (seed {SEED})\n{r.output()}"
        for before in seen:  # nothing committed before an earlier kill was lost or changed
            assert {k: now.get(k) for k in before} == before, f"lost tests (seed {SEED})\n{r.output()}"
        seen.append(now)
        if after_kill:
            after_kill(i)
        if i == kills - 1:
            break
        if before_resume:
            before_resume(i)
        p = r.start("--resume")
        if rng.random() < 0.5:
            killed = r.kill_after_commit(p, rng.randint(1, 2))
        else:
            killed = r.kill_after(p, rng.uniform(0.2, 4.0))
        assert killed, f"the study ended before kill {i + 2}: make it longer (seed {SEED})\n{r.output()}"
    p = r.start("--resume")
    assert p.wait(timeout=120) == 0, f"seed {SEED}\n{r.output()}"
    assert "resuming study #" in r.logs[-1].read_text()
    final = stored(r.db, r.name)
    for before in seen:
        assert {k: final.get(k) for k in before} == before, f"lost tests (seed {SEED})\n{r.output()}"
    assert studies(r.db, r.name) == [(1, "done")], r.output()
    assert all(v[4] for v in final.values()), f"a test failed (port in use?) (seed {SEED})\n{r.output()}"
    recs = json.loads(nettune("results", r.name, "--db", str(r.db), "--format", "json", check=True).stdout)
    assert len(recs) == len(final) and {x["study_id"] for x in recs} == {1}
    return seen


def slots(final: dict[int, tuple]) -> list[tuple]:
    return sorted(v[:4] for v in final.values())


def ours(runner_pids: list[int], names: list[str]) -> dict:
    """conftest.lab_leftovers, limited to this module's labs and processes (other people's
    labs may be up on this machine at the same time)."""
    from nettune.targets.lab.labnet import short_id

    found = lab_leftovers()
    mine = {}
    ns = [n for n in found.get("namespaces", []) if n.startswith("nettune-h3-") or n in {f"nettune-probe-{p}" for p in runner_pids}]
    links = [x for x in found.get("links", []) if x[2:7] in {short_id(n) for n in names}]
    procs = [x for x in found.get("iperf processes", []) if PORTS in _cmdline(x.split(":")[0])]
    for key, val in (("namespaces", ns), ("links", links), ("iperf processes", procs)):
        if val:
            mine[key] = val
    return mine


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


def test_local_study_killed_and_resumed(tmp_path):
    """Several points and runs with a warm-up on loopback; also the refusals: a changed
    file, no interrupted study, no study of that name."""
    name = "h3-res-local"
    r = Runner(tmp_path, name, study(name, "local", 5231, "[sweep]\nn = [1, 2, 3]\n[repeat]\nruns = 2\nwarmup = 1\n"))
    text = r.file.read_text()

    def changed_file_is_refused(i: int) -> None:
        if i:
            return
        r.file.write_text(text.replace("duration = 1", "duration = 2"))
        p = nettune("run", str(r.file), "--db", str(r.db), "--resume")
        r.file.write_text(text)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert "changed since" in p.stderr and "'duration = 1' is now 'duration = 2'" in p.stderr and "without --resume" in p.stderr

    kill_and_resume(r, random.Random(SEED), before_resume=changed_file_is_refused)
    final = stored(r.db, name)
    assert slots(final) == sorted((i, run, run < 1, None) for i in range(3) for run in range(3))
    p = nettune("run", str(r.file), "--db", str(r.db), "--resume")
    assert p.returncode == 2 and "no interrupted study named 'h3-res-local'" in p.stderr and "is done" in p.stderr
    p = nettune("run", str(r.file), "--db", str(tmp_path / "other.db"), "--resume")
    assert p.returncode == 2 and "no results database" in p.stderr
    from nettune.store.writer import StoreWriter

    StoreWriter(tmp_path / "empty.db").close()  # a database without this study
    p = nettune("run", str(r.file), "--db", str(tmp_path / "empty.db"), "--resume")
    assert p.returncode == 2 and "no study named 'h3-res-local' to resume" in p.stderr
    assert not ours(r.pids, [name])


def test_knob_study_restores_before_resuming(tmp_path, hostwide_values):
    """A host-wide sysctl swept per point: a killed run leaves it changed; each resume puts
    the original back first (so it records the true original again) and at the end it
    holds the original. Every stored test ran with its point's value."""
    from nettune.knobs.journal import Journal

    name = "h3-res-knobs"
    before = int(BACKLOG.read_text())
    r = Runner(tmp_path, name, study(name, "lab", 5233, f"""[sweep]
b = [{before + 111}, {before + 222}]
[repeat]
runs = 4
[knobs]
"sysctl:net.core.netdev_max_backlog" = "{{b}}"
"txqueuelen" = "{{b}}"
"""))
    journal = Journal(tmp_path / "state" / "journal.jsonl")
    changed_after_kill = []

    def after_kill(i: int) -> None:
        changed_after_kill.append(int(BACKLOG.read_text()) != before)

    kill_and_resume(r, random.Random(SEED + 1), after_kill=after_kill)
    assert int(BACKLOG.read_text()) == before
    assert journal.open_sessions() == []
    firsts: dict[str, dict] = {}
    for rec in journal.records():
        if rec["op"] == "change" and rec["knob"].startswith("sysctl:"):
            firsts.setdefault(rec["session"], rec)
    assert len(firsts) >= 2  # the first run and at least one resume changed it
    assert all(str(rec["original"]) == str(before) for rec in firsts.values()), firsts
    assert any(changed_after_kill)  # a kill left it changed: the restore had work to do
    assert any("restore-first: restored" in log.read_text() for log in r.logs[1:])
    from nettune.store.writer import StoreWriter

    with StoreWriter(r.db) as s:
        runs = s.runs(1)
    assert sorted((x["point_idx"], x["run"]) for x in runs) == [(i, k) for i in range(2) for k in range(4)]
    for x in runs:
        assert str(x["settings"]["knobs"]["machine"]["sysctl:net.core.netdev_max_backlog"]) == str(x["point"]["b"])
        assert x["settings"]["knobs"]["server"]["txqueuelen"] == x["point"]["b"]
    assert not ours(r.pids, [name])


def test_adaptive_repeats_continue_from_stored_values(tmp_path):
    """A margin no run reaches: every point gets exactly max_runs counted runs however
    often it is killed (a resume that forgot the stored values would run more)."""
    name = "h3-res-adapt"
    r = Runner(tmp_path, name, study(name, "local", 5234, "[sweep]\nn = [1, 2]\n[repeat]\nwarmup = 1\nmin_runs = 2\nmax_runs = 4\ntarget_margin = 0.000001\n"))
    kill_and_resume(r, random.Random(SEED + 2))
    assert slots(stored(r.db, name)) == sorted((i, run, run < 1, None) for i in range(2) for run in range(5))
    assert not ours(r.pids, [name])


def test_pairs_resume_only_the_missing_pairs(tmp_path):
    """Three lab hosts, every pair in rounds, one after the other: a kill in the middle of a
    slot keeps its stored pairs, and the resume runs only the others."""
    name = "h3-res-pairs"
    r = Runner(tmp_path, name, study(name, "lab", 5232, "[sweep]\nq = [1, 2]\n[repeat]\nruns = 2\n",
                                     target='hosts = ["a", "b", "c"]\nqueues = "{q}"\n', workload='pairs = "mesh"\n'))
    seen = kill_and_resume(r, random.Random(SEED + 3))
    pairs = ["a->b", "a->c", "b->c"]
    assert slots(stored(r.db, name)) == sorted((i, run, False, p) for i in range(2) for run in range(2) for p in pairs)
    # the first kill (1 or 2 commits into the first slot of 3 pairs) left a slot partly
    # stored, so a resume did run only the missing pairs of a slot
    partial = [s for s in seen if any(0 < sum(1 for v in s.values() if v[:2] == k) < 3 for k in {v[:2] for v in s.values()})]
    assert seen[0] in partial
    assert not ours(r.pids, [name])


@pytest.mark.parametrize("kind", ["lab", "local"])
def test_plain_run_right_after_kill_9(tmp_path, kind):
    """Without --resume: a new study at once, although the killed run's iperf3 server is
    still listening on the study's port (in its lab namespace, or on loopback)."""
    from nettune.targets.procs import port_listening

    name = f"h3-res-again-{kind}"
    r = Runner(tmp_path, name, study(name, kind, 5235, "[sweep]\nn = [1, 2]\n"))
    for _ in range(5):  # kill between the server's start and the client's: usually the first time
        old = set(_iperf_pids())
        p = r.start()
        server = None
        while server is None and p.poll() is None:
            time.sleep(0.002)
            server = next((pid for pid in _iperf_pids() if pid not in old and "-s " in _cmdline(pid) and "-p 5235" in _cmdline(pid)), None)
        _kill(p)
        assert server, f"it ended before its first test\n{r.output()}"
        deadline = time.monotonic() + 5
        listening = False
        while not listening and time.monotonic() < deadline:
            try:  # /proc/PID/net: the server's own network namespace
                listening = port_listening([Path(f"/proc/{server}/net/{t}").read_text() for t in ("tcp", "tcp6")], 5235, "tcp")
            except OSError:
                break  # it has ended (a client did come)
        if listening and not any("-c " in _cmdline(pid) and "-p 5235" in _cmdline(pid) for pid in _iperf_pids()):
            break  # the dead run's server waits for a client that will never come
        r.start().wait(timeout=120)  # the race was lost: clean up, try again
    else:
        pytest.fail("could not kill a run while its server was listening")
    if kind == "lab":
        assert any(n.startswith(f"nettune-{name}-") for n in netns.listnetns())
    p = r.start()
    assert p.wait(timeout=120) == 0, r.output()
    assert "killed run" in r.logs[-1].read_text()
    assert [s for _, s in studies(r.db, name)][-2:] == ["running", "done"]
    from nettune.store.writer import StoreWriter

    with StoreWriter(r.db) as s:
        runs = s.runs(studies(r.db, name)[-1][0])
    assert len(runs) == 2 and all(x["ok"] for x in runs), [x["error"] for x in runs]
    assert not ours(r.pids, [name])


def _iperf_pids() -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "iperf3":
                    out.append(pid)
            except OSError:
                pass
    return out


def test_resume_refused_while_the_runner_is_alive(tmp_path):
    name = "h3-res-alive"
    r = Runner(tmp_path, name, study(name, "local", 5237, "[sweep]\nn = [1, 2, 3, 4, 5, 6, 7, 8]\n", duration=2))
    p = r.start()
    while not stored(r.db, name) and p.poll() is None:
        time.sleep(0.02)
    q = nettune("run", str(r.file), "--db", str(r.db), "--resume")
    assert p.poll() is None, "the run must still be going for this test to mean anything"
    assert q.returncode == 2 and "is still running (pid " in q.stderr and str(p.pid) in q.stderr, q.stderr
    assert len(q.stderr.strip().splitlines()) == 1 and "Traceback" not in q.stderr
    assert studies(r.db, name) == [(1, "running")]
    goal = len(stored(r.db, name)) + 1
    while len(stored(r.db, name)) < goal and p.poll() is None:  # the run was not disturbed: it goes on
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)  # Ctrl-C: it cleans up by itself
    assert p.wait(timeout=60) == 130, r.output()
    got = slots(stored(r.db, name))
    assert len(got) >= 2 and len(got) == len(set(got))
    assert studies(r.db, name) == [(1, "interrupted")]
    assert not ours(r.pids, [name])


def test_schema_1_database_is_upgraded_and_its_study_resumed(tmp_path):
    """A database written before schema 2 (no file hash, no owner): opened, upgraded in
    place, and a study it left `running` is resumed into the same id."""
    from nettune import parse_study
    from nettune.store.writer import StoreWriter
    from nettune.store import schema as st

    name = "h3-res-old"
    text = study(name, "local", 5236, "[sweep]\nn = [1, 2]\n")
    f = tmp_path / "old.toml"
    f.write_text(text)
    db = tmp_path / "old.db"
    # schema 1: the same tables without the columns schema 2 (and 5) added to `studies`
    v1 = "\n".join(line for line in st.SCHEMA.splitlines() if "(schema 2)" not in line and "(schema 5)" not in line).replace("DEFAULT 'running',", "DEFAULT 'running'")
    assert "spec_hash" not in v1 and "owner" not in v1 and "nettune_version" not in v1
    con = sqlite3.connect(db)
    con.executescript(v1)
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute("INSERT INTO studies (name, spec_file, spec_text, spec_json, target_kind, started, status) VALUES (?,?,?,?,?,?,?)",
                (name, str(f), text, parse_study(text).model_dump_json(), "local", time.time(), "running"))
    con.execute("INSERT INTO points (study_id, idx, params_json) VALUES (1, 0, '{\"n\": 1}')")
    con.commit()
    con.close()
    with StoreWriter(db) as s:
        assert s.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(st.SCHEMA_VERSION)  # upgraded to the newest
        assert s.find_study(name)["spec_hash"] == hashlib.sha256(text.encode()).hexdigest()
    p = nettune("run", str(f), "--db", str(db), "--resume")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "resuming study #1: 0 of 2 tests done, 2 to run" in p.stdout
    assert studies(db, name) == [(1, "done")]
    assert slots(stored(db, name)) == [(0, 0, False, None), (1, 0, False, None)]


def test_a_parallel_round_is_stored_whole_or_not_at_all(tmp_path):
    """Store.add_runs: the pairs of a parallel round were measured together; a failure
    while storing them (here the second result cannot be stored) keeps none."""
    from nettune import TestResult, parse_study
    from nettune.store.writer import StoreWriter

    study = parse_study('name = "h3-res-round"\n[target]\nkind = "local"\n')
    with StoreWriter(tmp_path / "r.db") as s:
        sid = s.begin_study(study)
        pid = s.add_point(sid, 0, {})
        good = TestResult(engine="iperf3", receiver_bps=1e9, extra={"pair": "a->b"})
        bad = TestResult(engine="iperf3", receiver_bps=1e9, extra={"pair": "c->d", "x": {1, 2}})  # a set: not JSON
        with pytest.raises(TypeError):
            s.add_runs(sid, pid, 0, False, [good, bad])
        assert s.runs(sid) == []
        s.add_runs(sid, pid, 0, False, [good, good.model_copy(update={"extra": {"pair": "c->d"}})])
        assert [r["extra"]["pair"] for r in s.runs(sid)] == ["a->b", "c->d"]


@pytest.mark.parametrize("records_dir", [True, False], ids=["other-records", "no-records-dir"])
def test_a_process_started_but_not_yet_recorded_is_stopped(tmp_path, records_dir, monkeypatch):
    """kill -9 between starting a process and writing its record: the owner token in the
    process's environment still ties it to the dead run (and to nothing else); also when
    the run had recorded nothing yet, so the records' directory does not even exist."""
    from nettune.targets.procs import owner_alive, start_time, stop_recorded

    code = ("import os, sys, time; from nettune.targets.procs import LocalProc, PROC_DIR, owner_token\n"
            "p = LocalProc(['sleep', '60']); (PROC_DIR / str(p.pid)).unlink()\n"
            + ("" if records_dir else "PROC_DIR.rmdir()\n")
            + "print(p.pid, owner_token(), flush=True); time.sleep(60)")
    from nettune.targets import procs

    monkeypatch.setattr(procs, "PROC_DIR", tmp_path / "run" / "procs")  # this test's records only
    dead = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env={**os.environ, "NETTUNE_RUN_DIR": str(tmp_path / "run")})
    bystander = subprocess.Popen(["sleep", "60"])  # started here, no owner: never touched
    pid, owner = dead.stdout.readline().split(" ", 1)
    owner = owner.strip()
    try:
        assert stop_recorded(owners={owner}) == []  # its nettune is alive: left alone
        assert procs.PROC_DIR.is_dir() == records_dir
        _kill(dead)
        assert not owner_alive(owner)
        assert stop_recorded(owners={owner}) == [int(pid)]
        assert start_time(int(pid)) is None or Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] == "Z"
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
        _kill(dead)
        if start_time(int(pid)) is not None:  # only if stop_recorded missed it: never left behind
            os.kill(int(pid), signal.SIGKILL)
