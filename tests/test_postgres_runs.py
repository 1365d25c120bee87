"""Real studies against a PostgreSQL store (a throwaway cluster, tests/pg_cluster.py).

- The quick study (examples/quick.toml, on iperf3 over 2 x 2 points) on the built-in lab with `--db postgresql://...`:
  every test stored as it ended, and what PostgreSQL gives back is identical to what the
  same study gives back from SQLite (moved there with `nettune export`/`import`), value by
  value, analysis included; the stored raw iperf3 output parses to the stored values.
- kill -9 of a study writing to PostgreSQL right after a test was committed, then
  `--resume`: the study completes in the same study id, no test lost or stored twice.

Run them isolated (/work/isolated.sh): they start a lab, iperf3 and nettune processes.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import EXAMPLES, lab_leftovers, needs_iperf3, needs_root, nettune
from nettune.engines import get_engine
from nettune.engines.result import SideOutput
from nettune.studyfile.workload import Workload
from nettune.store import store_at

pytestmark = [needs_root, needs_iperf3]


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    """Journal and run state of this test only (the CLI subprocesses inherit them)."""
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))


VALUES = ("receiver_bps", "sender_bps", "receiver_bytes", "sender_bytes", "retransmits", "max_cwnd", "rtt_mean_us",
          "cpu_client", "cpu_server", "cpu_host", "duration", "ok", "run", "warmup", "point", "engine", "tool_version",
          "settings", "streams", "intervals", "cpu_units")


def test_the_quick_study_on_postgresql_gives_what_sqlite_gives(tmp_path, pg_url):
    f = tmp_path / "quick.toml"
    # the example on iperf3 over 2 x 2 points (its engine = "auto" may fan out or pick iperf2;
    # the stored raw output is parsed back as iperf3's below)
    text = (EXAMPLES / "quick.toml").read_text().replace('name = "quick"', 'name = "nettune-t-pgquick"')
    text = text.replace('kind = "lab"', 'kind = "lab"\nsubnet = "198.19.214.0/24"').replace('engine = "auto"', 'engine = "iperf3"')
    text = re.sub(r"(?m)^mult = \[1, 2, 4\].*$", "mult = [1, 2]", text)
    assert 'engine = "iperf3"' in text and "mult = [1, 2]\n" in text, "examples/quick.toml changed: update this test's edits"
    f.write_text(text)
    out = nettune("run", str(f), "--db", pg_url, "--doctor", "off", timeout=600, check=True).stdout
    assert "4 tests" in out and "postgresql://nettune@/" in out
    with store_at(pg_url) as s:
        st = s.find_study("nettune-t-pgquick")
        runs = s.runs(st["id"])
        raw = {r.id: s.raw_outputs(r.id) for r in runs}
    assert st["status"] == "done" and st["nettune_version"] and len(runs) == 4 and all(r.ok for r in runs)
    for r in runs:  # what PostgreSQL holds is what the parser made of iperf3's own output
        side = {o["side"]: SideOutput(role=o["side"], host=o["host"], argv=o["command"], stdout=o["stdout"]) for o in raw[r.id]}
        wl = Workload.model_validate({"engine": "iperf3", "duration": 2, "parallel": r.point["streams"]})
        parsed = get_engine("iperf3").parse(wl, side["client"], side["server"])
        assert (parsed.receiver_bps, parsed.sender_bytes, parsed.retransmits) == (r.receiver_bps, r.sender_bytes, r.retransmits)
    # the same study in SQLite: moved with export/import, read back through the same protocol
    lite = tmp_path / "r.db"
    nettune("export", "nettune-t-pgquick", "--db", pg_url, "-f", "json", "--series", "-o", str(tmp_path / "q.json"), check=True)
    nettune("import", str(tmp_path / "q.json"), "--study", "nettune-t-pgquick", "--db", str(lite), check=True)
    with store_at(lite) as s:
        back = s.runs(s.find_study("nettune-t-pgquick")["id"])
    pick = [{k: r.to_dict()[k] for k in VALUES if k != "settings"} for r in runs]
    assert pick == [{k: r.to_dict()[k] for k in VALUES if k != "settings"} for r in back]
    a = json.loads(nettune("analyze", "nettune-t-pgquick", "--db", pg_url, "--format", "json", check=True).stdout)
    b = json.loads(nettune("analyze", "nettune-t-pgquick", "--db", str(lite), "--format", "json", check=True).stdout)
    assert {k: v for k, v in a.items() if k != "study_id"} == {k: v for k, v in b.items() if k != "study_id"}
    assert not lab_leftovers()


LOCAL = """name = "nettune-t-pgresume"
[target]
kind = "local"
[workload]
duration = 1
port = 5241
[sweep]
parallel = [1, 2, 3]
[repeat]
runs = 3
"""


def _stored(url: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        try:
            return conn.execute("SELECT r.id, p.idx, r.run, r.warmup, r.ok FROM runs r JOIN points p ON p.id=r.point_id"
                                " ORDER BY r.id").fetchall()
        except psycopg.errors.UndefinedTable:
            return []


def test_kill_9_then_resume_completes_the_study_on_postgresql(tmp_path, pg_url):
    f = tmp_path / "s.toml"
    f.write_text(LOCAL)
    cmd = [sys.executable, "-m", "nettune.cli", "run", str(f), "--db", pg_url, "--doctor", "off"]
    log = tmp_path / "first.txt"
    with open(log, "w") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    while len(_stored(pg_url)) < 2 and p.poll() is None:
        time.sleep(0.02)
    assert p.poll() is None, log.read_text()
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    before = _stored(pg_url)
    assert 2 <= len(before) < 9
    r = nettune("run", str(f), "--db", pg_url, "--doctor", "off", "--resume", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "resuming study #1" in r.stdout
    after = _stored(pg_url)
    assert after[: len(before)] == before  # nothing committed before the kill was lost or changed
    slots = sorted(x[1:4] for x in after)
    assert slots == sorted((i, run, False) for i in range(3) for run in range(3)) and all(x[4] for x in after), (after, r.stdout)
    with store_at(pg_url) as s:
        assert [(x["id"], x["status"]) for x in s.named("nettune-t-pgresume")] == [(1, "done")]
    assert not lab_leftovers()
