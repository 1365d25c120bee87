"""The write-ahead journal of every setting nettune changes.

One JSON object per line in $NETTUNE_STATE_DIR/journal.jsonl (default /var/lib/nettune),
appended and fsynced BEFORE the change it describes, so that after kill -9 or a power
loss `nettune restore` knows every value that may be changed and what it was before.

    {"op": "begin",  "session", "study", "study_id", "pid", "pid_start", "time"}
    {"op": "change", "session", "seq", "study", "host", "knob", "loc", "place",
                     "original", "new", "time"}            # written before the change
    {"op": "actual", "session", "seq", "value"}           # read back after the change
    {"op": "done",   "session", "seq", "result", "detail"} # restored / unchanged / left / gone / void / not-applied
    {"op": "end",    "session", "time"}                   # everything of the session is settled

A change is pending until it has a "done" record; a session is open until "end".
tuned keeps originals in RAM only and bpftune re-reads tuned values as "originals" after
a crash; this file is why nettune does not.
"""
from __future__ import annotations

import fcntl
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NettuneError

# Every run reads the whole journal twice (is anything left to restore?): at 1 MiB that
# was ~60 ms a run; a few hundred records keep it under ~10 ms and still hold a study's
# changes (a study's own records never move: a journal is rotated only when nothing is open).
ROTATE_BYTES = 128 << 10


def state_dir() -> Path:
    return Path(os.environ.get("NETTUNE_STATE_DIR") or "/var/lib/nettune")


def journal_path() -> Path:
    return state_dir() / "journal.jsonl"


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@dataclass
class OpenSession:
    """A session that has not ended: its pending changes, oldest first."""

    id: str
    study: str = "?"
    study_id: int | None = None
    pid: int | None = None
    pid_start: str | None = None
    started: float = 0.0
    changes: list[dict[str, Any]] = field(default_factory=list)
    kept: bool = False  # `nettune doctor --fix`: meant to stay in force; restored only by `nettune restore`

    @property
    def alive(self) -> bool:
        """Is the process that wrote this session still running (same PID and start time)?"""
        return self.pid is not None and self.pid_start is not None and _start_time(self.pid) == self.pid_start and self.pid != os.getpid()

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started)) if self.started else "?"
        return f"study {self.study!r} (pid {self.pid}, started {when}): {len(self.changes)} change{'s' if len(self.changes) != 1 else ''} not restored"


class Journal:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else journal_path()

    # -- writing -----------------------------------------------------------------------
    def append(self, rec: dict[str, Any]) -> None:
        """Append one record and fsync it: when this returns, the record survives a crash."""
        line = json.dumps(rec, separators=(",", ":"), default=str) + "\n"
        while True:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                new = not self.path.exists()
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            except OSError as e:
                raise NettuneError(f"cannot write the knob journal {self.path}: {e.strerror}; run as root or set NETTUNE_STATE_DIR") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if not _still_at(fd, self.path):
                    continue  # rotated away while we waited for the lock: append to the new file
                size = os.fstat(fd).st_size
                if size:  # a record cut short by a crash must not swallow this one
                    with open(self.path, "rb") as f:
                        f.seek(size - 1)
                        if f.read(1) != b"\n":
                            line = "\n" + line
                os.write(fd, line.encode())
                os.fsync(fd)
                break
            finally:
                os.close(fd)
        if new:
            _fsync_dir(self.path.parent)

    def begin(self, study: str, study_id: int | None, kept: bool = False) -> str:
        """kept: changes meant to outlive this process (doctor fixes); they never block a
        study, and `nettune restore` puts them back like any other."""
        self.rotate_if_big()
        sid = uuid.uuid4().hex[:12]
        pid = os.getpid()
        rec = {"op": "begin", "session": sid, "study": study, "study_id": study_id, "pid": pid, "pid_start": _start_time(pid), "time": time.time()}
        self.append(rec | ({"kept": True} if kept else {}))
        return sid

    def change(self, session: str, seq: int, study: str, host: str, loc: dict[str, Any], place: dict[str, Any], original: Any, new: Any, ident: dict[str, Any] | None = None) -> dict[str, Any]:
        rec = {
            "op": "change", "session": session, "seq": seq, "study": study, "host": host, "knob": loc["key"],
            "loc": loc, "place": place, "ident": ident or {}, "original": original, "new": new, "time": time.time(),
        }
        self.append(rec)
        return rec

    def actual(self, session: str, seq: int, value: Any) -> None:
        self.append({"op": "actual", "session": session, "seq": seq, "value": value})

    def done(self, session: str, seq: int, result: str, detail: str = "") -> None:
        self.append({"op": "done", "session": session, "seq": seq, "result": result, "detail": detail, "time": time.time()})

    def end(self, session: str) -> None:
        self.append({"op": "end", "session": session, "time": time.time()})

    def rotate_if_big(self) -> None:
        """Keep the journal short: once it is big and nothing in it is open, start a new
        file (the old one stays as journal.jsonl.1). Checked and renamed under the lock
        that appends take, so a session that begins meanwhile is never split across files."""
        try:
            if self.path.stat().st_size < ROTATE_BYTES:
                return
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _still_at(fd, self.path) and not self.open_sessions():
                self.path.replace(self.path.with_suffix(".jsonl.1"))
        except (OSError, NettuneError):
            pass  # a journal we cannot rotate still works, only slower to read
        finally:
            os.close(fd)

    # -- reading -----------------------------------------------------------------------
    def records(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        except OSError as e:
            raise NettuneError(f"cannot read the knob journal {self.path}: {e.strerror}") from None
        out = []
        for line in text.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a line cut short by a crash: its change never happened
            if isinstance(rec, dict) and "op" in rec:
                out.append(rec)
        return out

    def open_sessions(self) -> list[OpenSession]:
        sessions: dict[str, OpenSession] = {}
        changes: dict[tuple[str, int], dict[str, Any]] = {}
        for rec in self.records():
            sid = rec.get("session", "")
            op = rec["op"]
            if op == "begin":
                sessions[sid] = OpenSession(sid, rec.get("study", "?"), rec.get("study_id"), rec.get("pid"), rec.get("pid_start"), rec.get("time", 0.0),
                                            kept=bool(rec.get("kept")))
            elif op == "end":
                sessions.pop(sid, None)
                for k in [k for k in changes if k[0] == sid]:
                    del changes[k]
            elif op == "change":
                sessions.setdefault(sid, OpenSession(sid, rec.get("study", "?")))
                changes[(sid, rec["seq"])] = dict(rec)
            elif op == "actual" and (sid, rec.get("seq")) in changes:
                changes[(sid, rec["seq"])]["actual"] = rec.get("value")
            elif op == "done":
                changes.pop((sid, rec.get("seq")), None)
        for (sid, _), rec in sorted(changes.items(), key=lambda kv: kv[0][1]):
            if sid in sessions:
                sessions[sid].changes.append(rec)
        return sorted(sessions.values(), key=lambda s: s.started)


def _still_at(fd: int, path: Path) -> bool:
    """Is the open file still the one at path (not renamed away by a rotation)?"""
    try:
        return os.fstat(fd).st_ino == path.stat().st_ino
    except OSError:
        return False


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
