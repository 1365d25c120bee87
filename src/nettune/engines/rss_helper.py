"""Peak memory of a timed command without nettune's own size in it.

Why a helper: the kernel's peak resident set of a process (ru_maxrss, VmHWM) survives
exec: at exec it keeps the high-water mark of the memory the process had before (fs/exec.c
records the old mm's hiwater into the task's maxrss), and a forked child's memory map
starts as a copy of its parent's. A command forked (or vforked, posix_spawned) by nettune
itself therefore starts with nettune's ~130 MiB as its peak, and a command that allocates
1 MiB reads 132 MiB. The floor of what can be read is the size of the process that forks
the command.

So the command is started by a small helper: `python3 -E -s -S -c HELPER COMMAND...`, a
Python that imports nothing but builtin modules (posix, _signal, time, sys), with the
current directory taken off its path first (nothing in the command's directory is imported).
It forks, and the child execs the command through GNU time where the host has it
(`/usr/bin/time -f %M -o /dev/fd/9`, checked once per run with `true`): GNU time is a small
C program (about 1 MiB), so the command's peak starts there, and a `dd` with a 1 MiB buffer
reads about 3 MiB, as `/usr/bin/time` alone says (`peak_rss_method = "rusage-time"`). Without
GNU time the child execs the command itself and the floor is the helper's own size (about
6 MiB with CPython 3.11: `peak_rss_method = "rusage-helper"`). Either way the value is the
largest process of the command's tree (wait4 of the command: it and every descendant it
reaped), as `/usr/bin/time`'s %M. A value GNU time gives above the helper's own wait4
(which covers GNU time and the tree) is not trusted: the helper's is taken.

The helper waits for the child, forwards TERM, INT and HUP to it, and writes one line at
the end of its stderr, which nettune removes from the output the command produced:

    NETTUNE-PEAK <maxrss KiB> <user s> <system s> <wall s> <method>

then exits as the command did (its exit code, or the same signal). The CPU seconds and the
wall seconds are the command's (from the fork to its exit, without the helper's start;
GNU time's own millisecond included), exact on every target: over ssh no round trip is in
the wall time. The command inherits fd 9 (the pipe GNU time writes its number to).

Where no python3 is there (an ssh host without one), the command runs unwrapped and peak
RSS stays empty, with the reason in `peak_rss_method`. cgroup v2 `memory.peak` measures
something else (all the run's processes together, page cache included: a build that writes
1 GiB of objects would read 1 GiB) and is not used.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

HELPER_METHOD = "rusage-helper"  # peak_rss_method: the helper's wait4 (floor: its own ~6 MiB)
TIME_METHOD = "rusage-time"  # GNU time's %M under the helper (floor: GNU time's ~1 MiB)
METHODS = (HELPER_METHOD, TIME_METHOD)
MARK = "\nNETTUNE-PEAK "
GNU_TIME = "/usr/bin/time"  # where Debian, Ubuntu, Fedora and RHEL put GNU time (package `time`)
# The helper, run with `python3 -E -s -S -c HELPER GNU_TIME PROGRAM ARGS...` (argv[0] is "-c").
HELPER = r"""
import posix, sys
sys.path[:] = [p for p in sys.path if p]
import time, _signal
gnu, a = sys.argv[1], sys.argv[2:]
def gnu_time_works():
    if not posix.access(gnu, posix.X_OK):
        return False
    pid = posix.fork()
    if pid == 0:
        fd = posix.open("/dev/null", posix.O_RDWR)
        for n in (0, 1, 2):
            posix.dup2(fd, n)
        try:
            posix.execv(gnu, [gnu, "-f", "%M", "-o", "/dev/null", "true"])
        finally:
            posix._exit(127)
    return posix.waitpid(pid, 0)[1] == 0
if "/" in a[0]:
    paths = [a[0]]
else:
    paths = [d + "/" + a[0] for d in posix.environ.get(b"PATH", b"/usr/bin:/bin").decode().split(":") if d]
def runnable(p):
    try:
        return posix.access(p, posix.X_OK) and (posix.stat(p).st_mode & 0o170000) == 0o100000
    except OSError:
        return False
found = [p for p in paths if runnable(p)][:1]
r = w = -1
if found and gnu_time_works():
    r, w = posix.pipe()
t0 = time.monotonic()
pid = posix.fork()
if pid == 0:
    if w >= 0:
        posix.close(r)
        posix.dup2(w, 9)
        posix.close(w)
        try:
            posix.execv(gnu, [gnu, "-f", "%M", "-o", "/dev/fd/9", found[0], *a[1:]])
        finally:
            posix._exit(127)
    err = 2
    for p in paths:
        try:
            posix.execv(p, a)
        except OSError as e:
            err = e.errno if err == 2 else err
    posix.write(2, ("%s: %s\n" % (a[0], posix.strerror(err))).encode())
    posix._exit(127 if err == 2 else 126)
def fwd(sig, frame):
    try:
        posix.kill(pid, sig)
    except OSError:
        pass
for s in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
    _signal.signal(s, fwd)
_, st, ru = posix.wait4(pid, 0)
t1 = time.monotonic()
peak, how = ru.ru_maxrss, "rusage-helper"
if w >= 0:
    posix.close(w)
    posix.set_blocking(r, False)
    try:
        said = posix.read(r, 4096).decode("ascii", "replace").split()
    except OSError:
        said = []
    if said and said[-1].isdigit() and 0 < int(said[-1]) <= peak:
        peak, how = int(said[-1]), "rusage-time"
    if "signal" in said and said.index("signal") + 1 < len(said) and said[said.index("signal") + 1].isdigit():
        st = int(said[said.index("signal") + 1])  # GNU time exits 128 + N: a wait status of signal N, as the command died
posix.write(2, ("\nNETTUNE-PEAK %d %r %r %r %s\n" % (peak, ru.ru_utime, ru.ru_stime, t1 - t0, how)).encode())
if posix.WIFSIGNALED(st):
    try:
        _signal.signal(posix.WTERMSIG(st), _signal.SIG_DFL)
    except (OSError, ValueError):
        pass
    posix.kill(posix.getpid(), posix.WTERMSIG(st))
    posix._exit(128 + posix.WTERMSIG(st))
posix._exit(posix.WEXITSTATUS(st))
"""
FLAGS = ["-E", "-s", "-S"]  # no PYTHON* variables, no site: nothing but the interpreter and builtin modules
REPORT = re.compile(r"NETTUNE-PEAK (\d+) ([0-9.e+-]+) ([0-9.e+-]+) ([0-9.e+-]+) (rusage-helper|rusage-time)\n?$")


@dataclass(frozen=True)
class PeakReport:
    """What the helper measured of the command it ran."""

    max_rss_kb: int
    user_s: float
    sys_s: float
    wall_s: float
    method: str  # peak_rss_method: how max_rss_kb was read (METHODS)


def wrapped(python: str, argv: list[str], gnu_time: str = GNU_TIME) -> list[str]:
    """The argv that runs `argv` under the helper with this host's `python` (and GNU time at
    `gnu_time` where it works there)."""
    return [python, *FLAGS, "-c", HELPER, gnu_time, *argv]


def take_report(stderr: str) -> tuple[PeakReport | None, str]:
    """(the helper's report, the command's own stderr without it); (None, stderr) when the
    helper wrote none (it was killed: a timeout, a lost connection)."""
    i = stderr.rfind(MARK)
    if i < 0:
        return None, stderr
    m = REPORT.match(stderr[i + 1:])
    if m is None:
        return None, stderr
    return PeakReport(int(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4)), m.group(5)), stderr[:i]
