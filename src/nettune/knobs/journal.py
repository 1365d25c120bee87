"""The write-ahead journal of every setting nettune changes.

One JSON object per line in $NETTUNE_STATE_DIR/journal.jsonl (default /var/lib/nettune),
appended and fsynced BEFORE the change it describes, so that after kill -9 or a power
loss `nettune restore` knows every value that may be changed and what it was before.

    {"op": "begin",  "session", "study", "study_id", "pid", "pid_start", "time",
                     "study_file", "study_digest"}        # the study file read, and its SHA-256
    {"op": "change", "session", "seq", "study", "host", "knob", "loc", "place",
                     "original", "new", "time"}            # written before the change
    {"op": "actual", "session", "seq", "value"}           # read back after the change
    {"op": "done",   "session", "seq", "result", "detail"} # restored / unchanged / left / gone / void / not-applied / forgotten
    {"op": "end",    "session", "time"}                   # everything of the session is settled

Every line also carries "n" and "sum", its place in its session's checksum chain
(journal_records.py). A change is pending until it has a "done" record; a session is
open until "end". What nettune reads back here is untrusted: the file must be the user's
own, not writable by group or others, and not a symbolic link (else every read and write
is refused with the fix), and restore re-checks every record by its knob kind (verify.py).
tuned keeps originals in RAM only and bpftune re-reads tuned values as "originals" after
a crash; this file is why nettune does not.
"""
from __future__ import annotations

import fcntl
import json
import os
import stat
import time
import uuid
from pathlib import Path
from typing import Any

from ..errors import NettuneError
from .base import Loc
from .journal_records import JournalChange, JournalError, OpenSession, Refused, SessionChain, process_start_time

# Every run reads the whole journal twice (is anything left to restore?): at 1 MiB that
# was ~60 ms a run; a few hundred records keep it under ~10 ms and still hold a study's
# changes (a study's own records never move: a journal is rotated only when nothing is open).
ROTATE_BYTES = 128 << 10


def state_dir() -> Path:
    return Path(os.environ.get("NETTUNE_STATE_DIR") or "/var/lib/nettune")


def journal_path() -> Path:
    return state_dir() / "journal.jsonl"


def check_private(st: os.stat_result, path: Path, what: str) -> None:
    """Refuse a file or directory someone else could have written: not ours, or writable
    by group or others (one line, with the fix)."""
    me = os.geteuid()
    if st.st_uid != me and not (stat.S_ISDIR(st.st_mode) and st.st_uid == 0):
        raise NettuneError(f"{path}: {what} belongs to uid {st.st_uid}, not to you (uid {me}); nettune does not act on a file someone else "
                           f"could have written: check it, then `chown {me} {path}` (or set NETTUNE_STATE_DIR to a directory of yours)")
    if st.st_mode & 0o022 and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX and st.st_uid == me):
        raise NettuneError(f"{path}: {what} is writable by group or others (mode {oct(st.st_mode & 0o777)}): anyone could have added to it; "
                           f"check it, then `chmod go-w {path}`")


def _open_checked(path: Path, flags: int) -> int:
    """open(2) without following a symbolic link at `path`, then the owner and mode check."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        if e.errno == 40:  # ELOOP: the journal is a symbolic link
            raise NettuneError(f"{path}: the knob journal is a symbolic link; nettune writes and reads only a file of its own: remove the link") from None
        raise
    try:
        check_private(os.fstat(fd), path, "the knob journal")
    except NettuneError:
        os.close(fd)
        raise
    return fd


class Journal:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else journal_path()
        # where each session's chain stands in the file (session -> (next n, last sum)),
        # and how far the file has been read for it: appends read only what is new
        self._links: dict[str, tuple[int, str]] = {}
        self._read_to: tuple[int, int] = (-1, 0)  # (inode, offset)

    # -- writing -----------------------------------------------------------------------
    def append(self, rec: dict[str, Any]) -> None:
        """Append one record, in its session's checksum chain, and fsync it: when this
        returns, the record survives a crash."""
        while True:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                check_private(os.stat(self.path.parent), self.path.parent, "the journal's directory")
                new = not self.path.exists()
                fd = _open_checked(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            except OSError as e:
                raise NettuneError(f"cannot write the knob journal {self.path}: {e.strerror}; run as root or set NETTUNE_STATE_DIR") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if not _still_at(fd, self.path):
                    continue  # rotated away while we waited for the lock: append to the new file
                tail = self._catch_up(fd)
                chain = SessionChain()
                chain.n, chain.prev = self._links.get(str(rec.get("session", "")), (0, ""))
                line = json.dumps(chain.stamp(rec), separators=(",", ":")) + "\n"
                if tail not in (b"", b"\n"):  # a record cut short by a crash must not swallow this one
                    line = "\n" + line
                data = line.encode()
                os.write(fd, data)
                os.fsync(fd)
                self._links[str(rec.get("session", ""))] = (chain.n, chain.prev)
                self._read_to = (self._read_to[0], self._read_to[1] + len(data))
                break
            finally:
                os.close(fd)
        if new:
            _fsync_dir(self.path.parent)

    def _catch_up(self, fd: int) -> bytes:
        """Read what other writers appended since this object last looked (under the lock),
        so each session's chain continues from its last record. Returns the file's last byte."""
        st = os.fstat(fd)
        ino, offset = self._read_to
        if ino != st.st_ino or offset > st.st_size:
            self._links, offset = {}, 0
        data = os.pread(fd, st.st_size - offset, offset) if st.st_size > offset else b""
        for raw in data.split(b"\n"):
            try:
                rec = json.loads(raw)
            except ValueError:
                continue  # a line cut short by a crash: never part of a chain
            if isinstance(rec, dict):
                sid = str(rec.get("session", ""))
                n, s = rec.get("n"), rec.get("sum")
                have = self._links.get(sid, (0, ""))
                self._links[sid] = (n + 1 if isinstance(n, int) else have[0] + 1, s if isinstance(s, str) else "")
        self._read_to = (st.st_ino, st.st_size)
        return os.pread(fd, 1, st.st_size - 1) if st.st_size else b""

    def begin(self, study: str, study_id: int | None, kept: bool = False, source: tuple[str, str] | None = None) -> str:
        """kept: changes meant to outlive this process (doctor fixes); they never block a
        study, and `nettune restore` puts them back like any other. source: (absolute path,
        SHA-256 of the text) of the study file the run read."""
        self.rotate_if_big()
        sid = uuid.uuid4().hex[:12]
        pid = os.getpid()
        rec = {"op": "begin", "session": sid, "study": study, "study_id": study_id, "pid": pid, "pid_start": process_start_time(pid), "time": time.time()}
        if source:
            rec |= {"study_file": source[0], "study_digest": source[1]}
        self.append(rec | ({"kept": True} if kept else {}))
        return sid

    def change(self, session: str, seq: int, study: str, host: str, loc: dict[str, Any], place: dict[str, Any], original: Any, new: Any,
               ident: dict[str, Any] | None = None) -> JournalChange:
        rec = JournalChange(session, seq, study, host, Loc.from_record(loc), place, original, new, ident or {}, time.time())
        self.append(rec.to_json())
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
            fd = _open_checked(self.path, os.O_RDONLY)
        except (OSError, NettuneError):
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
    def lines(self) -> list[tuple[int, dict[str, Any]]]:
        """(line number, record) of every whole line; a journal that is not the user's own,
        or that others may write, is refused (NettuneError, one line with the fix)."""
        try:
            fd = _open_checked(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise NettuneError(f"cannot read the knob journal {self.path}: {e.strerror}") from None
        with os.fdopen(fd, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        out = []
        for i, line in enumerate(text.splitlines(), 1):
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a line cut short by a crash: its change never happened
            if isinstance(rec, dict) and "op" in rec:
                out.append((i, rec))
        return out

    def records(self) -> list[dict[str, Any]]:
        return [rec for _, rec in self.lines()]

    def open_sessions(self) -> list[OpenSession]:
        """Sessions not ended, each with its pending changes (checksum chain intact, record
        well formed) and the records that are not believed (OpenSession.refused)."""
        sessions: dict[str, OpenSession] = {}
        chains: dict[str, SessionChain] = {}
        changes: dict[tuple[str, int], JournalChange] = {}
        refused: dict[str, list[Refused]] = {}
        for line, rec in self.lines():
            sid = str(rec.get("session", ""))
            op = rec["op"]
            chain = chains.setdefault(sid, SessionChain())
            bad = chain.check(rec)
            n = rec.get("n") if isinstance(rec.get("n"), int) else None
            if op == "begin":
                if bad is None:
                    sessions[sid] = _session(sid, rec)
                else:
                    sessions.setdefault(sid, OpenSession(sid, str(rec.get("study", "?"))[:200]))
            elif op == "end":  # settles: believed even after a break (it can only make nettune do less)
                sessions.pop(sid, None)
                changes = {k: v for k, v in changes.items() if k[0] != sid}
                refused.pop(sid, None)
                chains.pop(sid, None)
            elif op == "change":
                sessions.setdefault(sid, OpenSession(sid, str(rec.get("study", "?"))[:200]))
                try:
                    ch = JournalChange.from_json(rec)
                except JournalError as e:
                    refused.setdefault(sid, []).append(Refused(sid, n, line, f"not a change record nettune writes ({e}); not acted on"))
                    continue
                if bad is not None:
                    refused.setdefault(sid, []).append(Refused(sid, n, line, bad, ch))
                else:
                    changes[(sid, ch.seq)] = ch
            elif op == "actual" and bad is None and (sid, rec.get("seq")) in changes:
                changes[(sid, rec["seq"])].set_actual(rec.get("value"))
            elif op == "done":  # settles: believed even after a break
                changes.pop((sid, rec.get("seq")), None)
                refused[sid] = [r for r in refused.get(sid, []) if r.change is None or r.change.seq != rec.get("seq")]
        for (sid, _), ch in sorted(changes.items(), key=lambda kv: kv[0][1]):
            if sid in sessions:
                sessions[sid].changes.append(ch)
        for sid, refs in refused.items():
            if sid in sessions:
                sessions[sid].refused += refs
        return sorted(sessions.values(), key=lambda s: s.started)


def _session(sid: str, rec: dict[str, Any]) -> OpenSession:
    """An OpenSession from its begin record (fields of the wrong type read as unknown)."""
    def typed(key: str, t: type, default: Any) -> Any:
        v = rec.get(key)
        return v if isinstance(v, t) and not isinstance(v, bool) else default

    return OpenSession(sid, str(rec.get("study", "?"))[:200], typed("study_id", int, None), typed("pid", int, None), typed("pid_start", str, None),
                       float(typed("time", (int, float), 0.0)), kept=bool(rec.get("kept")), study_file=typed("study_file", str, ""),
                       study_digest=typed("study_digest", str, ""))


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
