"""Processes nettune starts, tracked by PID so they can be stopped after a crash.

Every process is recorded in /run/nettune/procs/<pid> with its kernel start time; a
later `nettune lab down` stops a recorded PID only if its start time still matches
(so a recycled PID belonging to someone else is never touched). Each also carries its
nettune's owner token in its environment (NETTUNE_OWNER): a run killed between starting
a process and recording it still leaves a way to find that process (stop_dead_runs).

The state directory is /run/nettune for root; for another user $XDG_RUNTIME_DIR/nettune,
else /tmp/nettune-<uid>, which anyone could have made first: so every state directory is
created 0700 and checked before use (owned by this user, not writable by others, not a
symbolic link; private_dir), and records are created with O_EXCL | O_NOFOLLOW, so a
planted symbolic link or record is refused instead of followed.
"""
from __future__ import annotations

import os
import re
import select
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

from ..errors import NettuneError
from .base import CommandResult, ProcBase


def run_dir() -> Path:
    """Where process, lab and credential records live (see the module doc)."""
    if os.environ.get("NETTUNE_RUN_DIR"):
        return Path(os.environ["NETTUNE_RUN_DIR"])
    if os.geteuid() == 0:
        return Path("/run/nettune")
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    return Path(xdg) / "nettune" if xdg.startswith("/") else Path(f"/tmp/nettune-{os.getuid()}")


STATE_DIR = run_dir()
PROC_DIR = STATE_DIR / "procs"
OWNER_ENV = "NETTUNE_OWNER"


def private_dir(path: Path, create: bool = True) -> bool:
    """Make `path` (0700) if `create` and it is missing, then check it is a directory of
    this user that nobody else may write, and not a symbolic link: records in it are acted
    on as root. True when it exists (and passed); NettuneError (one line, the fix) when not."""
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    me = os.geteuid()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise NettuneError(f"{path}: nettune's state directory is a symbolic link or not a directory; someone else may have made it: "
                           "remove it (or set NETTUNE_RUN_DIR to a directory of yours)")
    if st.st_uid != me:
        raise NettuneError(f"{path}: nettune's state directory belongs to uid {st.st_uid}, not to you (uid {me}); someone else may have "
                           "made it: remove it (or set NETTUNE_RUN_DIR to a directory of yours)")
    if st.st_mode & 0o022:
        raise NettuneError(f"{path}: nettune's state directory is writable by group or others (mode {oct(st.st_mode & 0o777)}): "
                           f"`chmod 700 {path}` once you checked what is in it")
    return True


def private_dirs(path: Path, create: bool = True) -> bool:
    """private_dir for `path` and its parent (a records folder in the state directory)."""
    return private_dir(path.parent, create) and private_dir(path, create)


def create_private(path: Path, text: str) -> None:
    """Write a new record: O_EXCL | O_NOFOLLOW (never through a link, never over a file
    that is there), 0600. FileExistsError when something is at `path` already."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def read_record(path: Path) -> str:
    """A record's text, never through a symbolic link (OSError then)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd) as f:
        return f.read(4096)


def start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat: start time in clock ticks since boot."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


class LocalProc(ProcBase):
    """A child process of nettune with output captured to files (no pipe deadlocks)."""

    def __init__(self, argv: list[str], pid_argv: list[str] | None = None, env: dict[str, str] | None = None):
        self.argv = pid_argv or argv
        self._out = tempfile.TemporaryFile("w+")
        self._err = tempfile.TemporaryFile("w+")
        env = dict(os.environ if env is None else env, **{OWNER_ENV: owner_token()})
        private_dirs(PROC_DIR)  # before the process exists: a planted records directory is refused, never used
        # Own session: a Ctrl-C in the terminal reaches nettune, which then stops its
        # children in order, instead of killing the server mid-write.
        self._p = subprocess.Popen(argv, stdout=self._out, stderr=self._err, stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        self.pid = self._p.pid
        self.rusage: os.struct_rusage | None = None
        self._code: int | None = None
        record_pid(self.pid)

    def poll(self) -> int | None:
        if self._code is None:
            try:
                pid, status, ru = os.wait4(self.pid, os.WNOHANG)
            except ChildProcessError:
                self._code = self._p.returncode if self._p.returncode is not None else -1
                forget_pid(self.pid)
                return self._code
            if pid:
                self._code = os.waitstatus_to_exitcode(status)
                self._p.returncode = self._code
                self.rusage = ru
                forget_pid(self.pid)
        return self._code

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.005
        exited = _exit_waiter(self.pid)
        try:
            while self.poll() is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError(f"{self.argv[0]} (pid {self.pid}) still running after {timeout:.0f}s")
                if exited is not None:  # woken the moment the child exits (a sleep loop adds up to its step per test)
                    select.select([exited], [], [], left)
                else:
                    time.sleep(delay if left is None else min(delay, left))
                    delay = min(delay * 2, 0.05)
        finally:
            if exited is not None:
                os.close(exited)
        assert self._code is not None
        return self._code

    def signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def stop(self, grace: float = 2.0) -> None:
        if self.poll() is not None:
            return
        self.signal(signal.SIGTERM)
        try:
            self.wait(grace)
        except TimeoutError:
            self.signal(signal.SIGKILL)
            self.wait(5)

    def output(self) -> tuple[str, str]:
        res = []
        for f in (self._out, self._err):
            f.flush()
            f.seek(0)
            res.append(f.read())
            f.seek(0, 2)
        return res[0], res[1]

    def cpu_seconds(self) -> float | None:
        """User+system CPU of the exited child, from wait4's rusage (exact)."""
        if self.rusage is None:
            return None
        return self.rusage.ru_utime + self.rusage.ru_stime

    def rusage_tree(self) -> dict[str, float] | None:
        """wait4's rusage: the child plus every descendant it reaped (a build's compilers)."""
        ru = self.rusage
        return None if ru is None else {"user": ru.ru_utime, "sys": ru.ru_stime, "max_rss_kb": float(ru.ru_maxrss)}

    def stop_group(self, grace: float = 2.0) -> None:
        """TERM the group this child leads (start_new_session: its PGID is its PID), KILL
        what is left after `grace`. The group outlives its leader while a member lives, so
        the PGID cannot be reused by another group until they are all gone."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                break  # nobody left in the group
            end = time.monotonic() + wait
            while time.monotonic() < end and (self.poll() is None or _group_alive(self.pid)):
                time.sleep(0.02)
            if self.poll() is not None and not _group_alive(self.pid):
                break
        self.stop(grace)


def _group_alive(pgid: int) -> bool:
    """Does a live (not zombie) process of this machine still belong to group `pgid`?"""
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                state, _, pgrp = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[:3]
            except (OSError, ValueError):
                continue
            if int(pgrp) == pgid and state != "Z":
                return True
    return False


def _exit_waiter(pid: int) -> int | None:
    """A pidfd that becomes readable when the child exits (Linux >= 5.3); None where the
    kernel has none, and then wait() polls."""
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None


def with_env(extra: dict[str, str] | None) -> dict[str, str] | None:
    """This process's environment plus `extra` (None: inherit it unchanged)."""
    return {**os.environ, **extra} if extra else None


def run_local(argv: list[str], timeout: float = 30.0, input: str | None = None) -> CommandResult:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=input, stdin=None if input is not None else subprocess.DEVNULL)
    except FileNotFoundError:
        return CommandResult(argv, 127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired as e:
        return CommandResult(argv, 124, _s(e.stdout), _s(e.stderr) + f"\ntimed out after {timeout:.0f}s")
    return CommandResult(argv, p.returncode, p.stdout, p.stderr)


def _s(b: bytes | str | None) -> str:
    if b is None:
        return ""
    return b if isinstance(b, str) else b.decode(errors="replace")


def owner_token() -> str:
    """This nettune process, as '<pid> <start time>' (a PID alone can be recycled)."""
    return f"{os.getpid()} {start_time(os.getpid())}"


def boot_id() -> str:
    """This machine's boot (the kernel's random boot id): a pid and start time mean
    something only on the machine and boot that gave them."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def study_owner() -> str:
    """The owner a study row records: this process's token, its boot id and machine name.
    A shared database (PostgreSQL) holds studies run on several machines; only the machine
    that ran one can tell whether its runner is alive (`owner_state`)."""
    return f"{owner_token()} {boot_id() or '-'} {os.uname().nodename}"


def local_token(token: str) -> str:
    """A study owner's process part ('<pid> <start time>'), as pid records and labs name it."""
    return " ".join(token.split()[:2])


def owner_state(token: str) -> str:
    """'alive' or 'dead' when this machine can tell (the runner ran here: a token of old,
    pid and start time only, counts as this machine's, SQLite files being local; a runner
    of an earlier boot of this machine is dead), 'elsewhere' when another machine ran it:
    only that machine can tell, so nothing here takes its study over. Machines that share
    one database need distinct names (`uname -n`)."""
    parts = token.split()
    if len(parts) <= 2 or parts[2] == (boot_id() or "-"):
        return "alive" if owner_alive(local_token(token)) else "dead"
    return "dead" if owner_machine(token) == os.uname().nodename else "elsewhere"


def owner_machine(token: str) -> str:
    """The machine name a study owner token names ('' for a token of old)."""
    parts = token.split()
    return parts[3] if len(parts) > 3 else ""


def owner_alive(token: str) -> bool:
    parts = token.split()
    return len(parts) == 2 and parts[0].isdigit() and start_time(int(parts[0])) == parts[1] and not zombie(int(parts[0]))


def lab_owner(study: str) -> str:
    """The owner a process `nettune lab up` leaves running on purpose is recorded with (its
    lab's sshds): not a run, so no dead-run cleanup stops it; `nettune lab down` does."""
    return f"lab {study}"


def _lab_owned(owner: str) -> bool:
    return owner.startswith("lab ")


def record_pid(pid: int, owner: str | None = None) -> None:
    """Record a process nettune started (its start time and owner: this run, or a lab's
    lab_owner) so that a later run, `nettune restore` or `lab down` can stop it after this
    run is killed."""
    st = start_time(pid)
    if st is None:
        return
    f = PROC_DIR / str(pid)
    text = f"{st} {owner or owner_token()}"
    try:
        private_dirs(PROC_DIR)  # LocalProc checked it before starting the process; sshlab's sshds come here first
        create_private(f, text)
    except FileExistsError:  # a killed run's record of a recycled PID (or a planted link): replaced, never followed
        f.unlink(missing_ok=True)
        try:
            create_private(f, text)
        except OSError:
            pass
    except (OSError, NettuneError):
        pass  # unrecorded, it is still found by its owner mark (stop_dead_runs)


def forget_pid(pid: int) -> None:
    """The recorded process has ended (or was stopped): drop its record."""
    try:
        (PROC_DIR / str(pid)).unlink()
    except OSError:
        pass


def stop_recorded(force: bool = False, owners: set[str] | None = None, labs: bool = True) -> list[int]:
    """Stop every recorded process still alive with the same start time whose nettune
    owner is gone (a killed run). With force, also those of a nettune still running.
    With owners, only the processes those nettune runs started; labs=False leaves the
    sshds of labs `nettune lab up` made (lab_owner). Returns the PIDs stopped."""
    stopped: list[int] = []
    # no records at all (a run killed before it recorded its first process) still leaves
    # the owner scan below
    for f in PROC_DIR.iterdir() if private_dirs(PROC_DIR, create=False) else ():
        try:
            pid = int(f.name)
            st, _, owner = read_record(f).strip().partition(" ")
        except (ValueError, OSError):
            continue
        if (owners is not None and owner not in owners) or (_lab_owned(owner) and not labs):
            continue
        if owner and owner_alive(owner) and not force:
            continue  # a study still running owns it
        if start_time(pid) == st:
            kill_pid(pid)
            stopped.append(pid)
        f.unlink(missing_ok=True)
    for pid in started_by({o for o in owners or () if force or not owner_alive(o)}):
        if pid not in stopped:  # killed after starting it, before recording it
            kill_pid(pid)
            stopped.append(pid)
    return stopped


def same_pid_namespace(pid: int) -> bool:
    """Whether process `pid` lives in this process's PID namespace. An owner token names a
    PID of its own namespace: a run in another one (an isolated test run, a container)
    cannot be judged alive or dead from here, so its processes are never stopped from here
    (seen: a run on the host stopped every server of a bench in private namespaces)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid") == os.readlink("/proc/self/ns/pid")
    except OSError:
        return False


def marked_processes() -> dict[int, str]:
    """Every live process of this machine (that this user may read) carrying a nettune
    owner mark in its environment: pid -> the owner token."""
    found: dict[int, str] = {}
    prefix = f"{OWNER_ENV}=".encode()
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                env = Path(f"/proc/{d}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            mark = next((e[len(prefix):] for e in env if e.startswith(prefix)), None)
            if mark is not None and not zombie(int(d)) and same_pid_namespace(int(d)):
                found[int(d)] = mark.decode(errors="replace")
    return found


def stop_dead_runs(force: bool = False, owners: set[str] | None = None, labs: bool = False) -> list[int]:
    """Stop every process a killed nettune run started on this machine: the recorded ones
    (by PID and start time) and every other process whose owner mark names a nettune that
    is gone (started just before the kill, or by a server that forked). `nettune restore`,
    `nettune lab down` and the next `nettune run` call this before they remove namespaces
    or reuse ports. owners: only these runs' processes; force: also those of runs still
    going; labs: also what `nettune lab up` left running on purpose (only `lab down` does)."""
    stopped = stop_recorded(force, owners, labs)
    me = owner_token()
    for pid, owner in marked_processes().items():
        if pid in stopped or owner == me or (owners is not None and owner not in owners):
            continue
        if force or not owner_alive(owner):
            kill_pid(pid)
            stopped.append(pid)
    return stopped


def started_by(owners: set[str]) -> list[int]:
    """Live processes whose environment names one of these nettune runs as their owner."""
    if not owners:
        return []
    want = {f"{OWNER_ENV}={o}".encode() for o in owners}
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                env = set(Path(f"/proc/{d}/environ").read_bytes().split(b"\0"))
            except OSError:
                continue
            if env & want and not zombie(int(d)) and same_pid_namespace(int(d)):
                found.append(int(d))
    return found


DIR_RECORDS = STATE_DIR / "dirs"


def record_dir(path: str) -> None:
    """Record a private directory nettune made on this machine (test credentials), with
    its owner, so that `remove_stale_dirs` can delete it after a killed run. A record of
    that name already there is refused: it can only have been planted (the names are random)."""
    private_dirs(DIR_RECORDS)
    try:
        create_private(DIR_RECORDS / Path(path).name, f"{path}\n{owner_token()}")
    except FileExistsError:
        raise NettuneError(f"{DIR_RECORDS / Path(path).name}: a record for nettune's new directory {path} is there already; "
                           "nettune did not write it: remove it") from None
    except OSError:
        pass


def forget_dir(path: str) -> None:
    (DIR_RECORDS / Path(path).name).unlink(missing_ok=True)


def remove_stale_dirs(prefix: str, force: bool = False) -> list[str]:
    """Delete recorded directories (only those under `prefix`) whose nettune is gone
    (with force, also those of one still running). Returns the paths removed."""
    import shutil  # noqa: PLC0415

    removed: list[str] = []
    if not private_dirs(DIR_RECORDS, create=False):
        return removed
    for f in DIR_RECORDS.iterdir():
        try:
            path, _, owner = read_record(f).partition("\n")
        except OSError:
            continue
        if owner and owner_alive(owner.strip()) and not force:
            continue
        if _stale_dir_ours(f.name, path, prefix):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        f.unlink(missing_ok=True)
    return removed


def _stale_dir_ours(record: str, path: str, prefix: str) -> bool:
    """Is `path` a directory this record may name: under `prefix`, named as the record is,
    one plain name, and a real directory of this user (not a link to another's)?"""
    rest = path[len(prefix):]
    if not path.startswith(prefix) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", rest) or Path(path).name != record:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def kill_pid(pid: int, grace: float = 2.0) -> None:
    """SIGTERM, then SIGKILL after `grace`; for processes that are not our children."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + grace
    while time.monotonic() < end:
        if start_time(pid) is None or zombie(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def port_listening(proc_net_texts: list[str], port: int, proto: str) -> bool:
    """Is `port` bound in /proc/net/{tcp,tcp6,udp,udp6} contents? TCP needs state LISTEN (0A)."""
    want = f"{port:04X}"
    for text in proc_net_texts:
        for line in text.splitlines()[1:]:
            parts = line.split()
            if len(parts) < 4:
                continue
            if parts[1].rsplit(":", 1)[-1] == want and (proto == "udp" or parts[3] == "0A"):
                return True
    return False
