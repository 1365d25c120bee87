"""Peak memory of a timed command without nettune's own size in it.

Why a helper: the kernel's peak resident set of a process (ru_maxrss, VmHWM) survives
exec: at exec it keeps the high-water mark of the memory the process had before (fs/exec.c
records the old mm's hiwater into the task's maxrss). A command forked (or vforked,
posix_spawned) by nettune itself therefore starts with nettune's ~130 MiB as its peak,
and a command that allocates 1 MiB reads 132 MiB.

So the command is started by a small helper: `python3 -E -s -S -c HELPER COMMAND...`, a
Python that imports nothing but builtin modules (posix, _signal, time, sys), with the
current directory taken off its path first (nothing in the command's directory is imported), forks, and execs the
command in the child. The child's peak starts at the helper's own size (about 7 MiB with
CPython 3.11: the floor of what can be read), never nettune's. The helper waits for it
(wait4: the command and every descendant it reaped, the largest process's peak, as
`/usr/bin/time`'s %M), forwards TERM, INT and HUP to it, and writes one line at the end of
its stderr, which nettune removes from the output the command produced:

    NETTUNE-PEAK <maxrss KiB> <user s> <system s> <wall s>

then exits as the command did (its exit code, or the same signal). The CPU seconds and the
wall seconds are the command's alone (from the fork to its exit, without the helper's
start), exact on every target: over ssh no round trip is in the wall time.

Where no python3 is there (an ssh host without one), the command runs unwrapped and peak
RSS stays empty, with the reason in `peak_rss_method`. cgroup v2 `memory.peak` measures
something else (all the run's processes together, page cache included) and is not used.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

METHOD = "rusage-helper"  # peak_rss_method of a value measured this way
MARK = "\nNETTUNE-PEAK "
# The helper, run with `python3 -E -s -S -c HELPER PROGRAM ARGS...` (argv[0] is "-c").
HELPER = r"""
import posix, sys
sys.path[:] = [p for p in sys.path if p]
import time, _signal
a = sys.argv[1:]
t0 = time.monotonic()
pid = posix.fork()
if pid == 0:
    if "/" in a[0]:
        paths = [a[0]]
    else:
        paths = [d + "/" + a[0] for d in posix.environ.get(b"PATH", b"/usr/bin:/bin").decode().split(":") if d]
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
posix.write(2, ("\nNETTUNE-PEAK %d %r %r %r\n" % (ru.ru_maxrss, ru.ru_utime, ru.ru_stime, t1 - t0)).encode())
if posix.WIFSIGNALED(st):
    _signal.signal(posix.WTERMSIG(st), _signal.SIG_DFL)
    posix.kill(posix.getpid(), posix.WTERMSIG(st))
    posix._exit(128 + posix.WTERMSIG(st))
posix._exit(posix.WEXITSTATUS(st))
"""
FLAGS = ["-E", "-s", "-S"]  # no PYTHON* variables, no site: nothing but the interpreter and builtin modules
REPORT = re.compile(r"NETTUNE-PEAK (\d+) ([0-9.e+-]+) ([0-9.e+-]+) ([0-9.e+-]+)\n?$")


@dataclass(frozen=True)
class PeakReport:
    """What the helper measured of the command it ran."""

    max_rss_kb: int
    user_s: float
    sys_s: float
    wall_s: float


def wrapped(python: str, argv: list[str]) -> list[str]:
    """The argv that runs `argv` under the helper with this host's `python`."""
    return [python, *FLAGS, "-c", HELPER, *argv]


def take_report(stderr: str) -> tuple[PeakReport | None, str]:
    """(the helper's report, the command's own stderr without it); (None, stderr) when the
    helper wrote none (it was killed: a timeout, a lost connection)."""
    i = stderr.rfind(MARK)
    if i < 0:
        return None, stderr
    m = REPORT.match(stderr[i + 1:])
    if m is None:
        return None, stderr
    return PeakReport(int(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4))), stderr[:i]
