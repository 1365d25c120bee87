"""The knob journal: durable before every change, restores newest-first, only what is still ours.

These tests use a `command` knob acting on a temporary file, so they need no root: the
journal and restore logic are the same for every kind. A "crash" is a child process that
applies knobs and then dies with os._exit (as after kill -9).
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nettune.errors import NettuneError
from nettune.knobs.journal import Journal
from nettune.knobs.restore import pending, restore_pending
from nettune.knobs.apply import KnobSession
from nettune.knobs.gate import journal_gate
from nettune.knobs.precheck import precheck
from nettune.plan.points import expand_and_check
from nettune import parse_study
from nettune.targets import make_target


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def study_text(tmp_path: Path, values=("a", "b"), extra_knob: bool = False) -> str:
    f = tmp_path / "setting"
    if not f.exists():
        f.write_text("orig")
    g = tmp_path / "other"
    if extra_knob and not g.exists():
        g.write_text("g0")
    knob = f"\"command:f\" = {{value = \"{{v}}\", read = [\"cat\", \"{f}\"], apply = 'printf %s \"$1\" > {f}'}}\n"
    if extra_knob:
        knob += f"\"command:g\" = {{value = \"g-{{v}}\", read = [\"cat\", \"{g}\"], apply = 'printf %s \"$1\" > {g}'}}\n"
    return textwrap.dedent(f"""
        name = "tj"
        [target]
        kind = "local"
        [workload]
        duration = 1
        [sweep]
        v = {json.dumps(list(values))}
        [knobs]
        """) + knob


def crash_after(tmp_path: Path, text: str, points: int) -> None:
    """Apply the first `points` points in a child process that then dies without restoring."""
    spec = tmp_path / "s.toml"
    spec.write_text(text)
    code = textwrap.dedent(f"""
        import os
        from nettune.knobs.apply import KnobSession
        from nettune.plan.points import expand_and_check
        from nettune import load_study
        from nettune.targets import make_target
        study = load_study({str(spec)!r})
        target = make_target(study)
        s = KnobSession(study, target, 1)
        for rp in expand_and_check(study)[:{points}]:
            s.apply_point(rp)
        os._exit(9)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, timeout=60)
    assert r.returncode == 9, r.stderr


def test_records_are_fsynced_lines_and_a_torn_line_is_ignored(state_dir):
    j = Journal()
    sid = j.begin("s", 1)
    j.change(sid, 1, "s", "h", {"key": "mtu", "kind": "mtu", "arg": None, "device": "x"}, {"type": "machine", "key": "machine"}, 1500, 9000)
    with open(j.path, "a") as f:
        f.write('{"op": "change", "session": "torn"')  # a crash in the middle of a write
    j.actual(sid, 1, 9000)
    recs = j.records()
    assert [r["op"] for r in recs] == ["begin", "change", "actual"]
    (s,) = j.open_sessions()
    assert s.changes[0].original == 1500 and s.changes[0].actual == 9000
    j.done(sid, 1, "restored")
    j.end(sid)
    assert j.open_sessions() == []
    assert oct(j.path.stat().st_mode & 0o777) == "0o600"


def test_run_restores_in_reverse_order_and_the_journal_closes(tmp_path):
    text = study_text(tmp_path, extra_knob=True)
    study = parse_study(text)
    resolved = expand_and_check(study, text)
    s = KnobSession(study, make_target(study), None)
    s.apply_point(resolved[0])
    assert (tmp_path / "setting").read_text() == "a" and (tmp_path / "other").read_text() == "g-a"
    s.apply_point(resolved[1])
    assert (tmp_path / "setting").read_text() == "b"
    assert s.restore_all() == []
    assert (tmp_path / "setting").read_text() == "orig" and (tmp_path / "other").read_text() == "g0"
    done = [r["seq"] for r in Journal().records() if r["op"] == "done"]
    assert done == sorted(done, reverse=True)  # newest change restored first
    assert Journal().open_sessions() == []


def test_restore_after_kill_puts_back_the_first_original_in_one_write(tmp_path):
    """orig->a, a->b: the restore writes orig once, never a in between (it wrote a, then orig,
    and printed both: "b -> a", "a -> orig"); the older change shares the newest's outcome."""
    crash_after(tmp_path, study_text(tmp_path), points=2)
    assert (tmp_path / "setting").read_text() == "b"
    dead, alive = pending()
    assert len(dead) == 1 and not alive and len(dead[0].changes) == 2  # orig->a, a->b
    out, _ = restore_pending()
    assert (tmp_path / "setting").read_text() == "orig"
    assert [r for r, _ in out.lines] == ["restored"] and not out.failed
    assert "b -> orig" in out.lines[0][1] and "-> a" not in out.lines[0][1], out.lines
    assert [r["result"] for r in Journal().records() if r["op"] == "done"] == ["restored", "restored"]  # both changes closed
    assert Journal().open_sessions() == []
    out, _ = restore_pending()  # idempotent
    assert out.lines == []


def test_value_changed_by_someone_else_is_left_and_warned(tmp_path):
    crash_after(tmp_path, study_text(tmp_path), points=2)
    (tmp_path / "setting").write_text("admin")
    out, _ = restore_pending()
    assert (tmp_path / "setting").read_text() == "admin"
    assert len(out.warnings) == 1 and "someone else" in out.warnings[0] and "orig" in out.warnings[0]
    assert [r for r, _ in out.lines] == ["left"]  # the older change of the same setting is not touched either
    assert Journal().open_sessions() == []


def test_change_journaled_but_never_made_counts_as_restored(tmp_path):
    """Killed between the fsync of the record and the write: the value is still the original."""
    crash_after(tmp_path, study_text(tmp_path), points=1)
    (tmp_path / "setting").write_text("orig")
    out, _ = restore_pending()
    assert [r for r, _ in out.lines] == ["unchanged"]
    assert (tmp_path / "setting").read_text() == "orig"


def test_run_refuses_over_an_unrestored_journal_until_restored(tmp_path):
    text = study_text(tmp_path)
    crash_after(tmp_path, text, points=1)
    study = parse_study(text)
    with pytest.raises(NettuneError, match=r"nettune restore.*--restore-first"):
        precheck(study, make_target(study), expand_and_check(study, text), text)
    # a study without knobs refuses too: the changed values would distort it
    with pytest.raises(NettuneError, match="nettune restore"):
        journal_gate(False)
    notes = journal_gate(True, restore_first=True)
    assert notes and "restored" in notes[0]
    assert (tmp_path / "setting").read_text() == "orig"
    assert journal_gate(True) == []


def test_a_running_session_is_never_restored_by_someone_else(tmp_path, state_dir):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
        j = Journal()
        j.append({"op": "begin", "session": "live", "study": "other", "pid": sleeper.pid, "pid_start": start, "time": 1.0})
        j.change("live", 1, "other", "machine", {"key": "command:x", "kind": "command", "arg": "x", "device": None,
                 "spec": {"read": ["cat", "/nonexistent"], "apply": ["true"]}}, {"type": "machine", "key": "machine"}, "o", "n")
        out, alive = restore_pending()
        assert out.lines == [] and [s.id for s in alive] == ["live"]
        with pytest.raises(NettuneError, match="right now"):
            journal_gate(True)
        assert journal_gate(False) == []  # a study without knobs may run alongside
    finally:
        sleeper.kill()
        sleeper.wait()


def test_session_that_died_before_changing_anything_is_closed_quietly(tmp_path):
    Journal().append({"op": "begin", "session": "empty", "study": "x", "pid": 999999999, "pid_start": "1", "time": 1.0})
    assert journal_gate(True) == []
    assert Journal().open_sessions() == []


def test_journal_not_writable_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", "/proc/nettune-nope")
    with pytest.raises(NettuneError, match="NETTUNE_STATE_DIR"):
        Journal().begin("x", 1)


def _fill(j: Journal, closed_sessions: int) -> None:
    """Sessions that began, changed a setting, restored it and ended: history, nothing open."""
    loc = {"key": "mtu", "kind": "mtu", "arg": None, "device": "x"}
    for i in range(closed_sessions):
        sid = f"old{i}"
        j.append({"op": "begin", "session": sid, "study": "s", "pid": 1, "pid_start": "1", "time": 1.0})
        j.append({"op": "change", "session": sid, "seq": 1, "study": "s", "host": "h", "knob": "mtu", "loc": loc,
                  "place": {"type": "machine", "key": "machine"}, "original": 1500, "new": 9000, "pad": "x" * 400})
        j.append({"op": "done", "session": sid, "seq": 1, "result": "restored"})
        j.append({"op": "end", "session": sid})


def test_a_big_journal_with_nothing_open_is_rotated_by_the_next_run_even_without_knobs(state_dir):
    from nettune.knobs import journal as journal_mod

    j = Journal()
    _fill(j, 1 + journal_mod.ROTATE_BYTES // 700)
    assert j.path.stat().st_size >= journal_mod.ROTATE_BYTES
    assert journal_gate(False) == []  # a study without knobs: it reads the journal, and tidies it
    assert not j.path.exists() or j.path.stat().st_size < 1000
    assert (state_dir / "journal.jsonl.1").stat().st_size >= journal_mod.ROTATE_BYTES  # history kept once
    sid = j.begin("next", 2)  # the journal goes on in a new file
    assert [s.id for s in j.open_sessions()] == [sid]


def test_a_big_journal_with_an_open_session_is_never_rotated(state_dir):
    from nettune.knobs import journal as journal_mod

    j = Journal()
    _fill(j, 1 + journal_mod.ROTATE_BYTES // 700)
    dead = "deadbeef"
    j.append({"op": "begin", "session": dead, "study": "k", "pid": 999999999, "pid_start": "1", "time": 1.0})
    j.change(dead, 1, "k", "h", {"key": "mtu", "kind": "mtu", "arg": None, "device": "x"}, {"type": "machine", "key": "machine"}, 1500, 9000)
    size = j.path.stat().st_size
    j.rotate_if_big()
    j.begin("other", 3)  # begin() rotates too, and must not either
    assert j.path.stat().st_size > size and not (state_dir / "journal.jsonl.1").exists()
    assert [c.original for s in j.open_sessions() if s.id == dead for c in s.changes] == [1500]


def test_an_append_waiting_while_the_journal_is_rotated_lands_in_the_new_file(state_dir):
    """A record written by another process while a rotation holds the lock must not end up
    in the rotated-away file (its session would look closed there and open nowhere)."""
    import fcntl
    import threading

    from nettune.knobs import journal as journal_mod

    j = Journal()
    _fill(j, 1 + journal_mod.ROTATE_BYTES // 700)
    fd = os.open(j.path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as rotate_if_big holds it
    writer = threading.Thread(target=j.append, args=({"op": "begin", "session": "late", "study": "x", "pid": 1, "time": 2.0},))
    writer.start()
    writer.join(0.3)
    assert writer.is_alive()  # waiting for the lock, with the old file open
    j.path.replace(j.path.with_suffix(".jsonl.1"))
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    writer.join(10)
    assert [r["session"] for r in j.records()] == ["late"]
    assert "late" not in (state_dir / "journal.jsonl.1").read_text()
