import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Labs, their sshds' keys and known_hosts, PID records: nettune keeps them in its run
# directory (/run/nettune for root), which every test process on a machine would share,
# including ones in other mount and network namespaces (isolated runs), where a bare
# `nettune lab down` takes another's lab for gone and deletes its keys. One directory per
# test session, set before nettune is imported (targets/procs.py reads it at import) and
# inherited by every `nettune` the tests start; a test may still set its own.
if "NETTUNE_RUN_DIR" not in os.environ:
    import atexit
    import tempfile

    _RUN_DIR = tempfile.mkdtemp(prefix="nettune-tests-run.")
    os.environ["NETTUNE_RUN_DIR"] = _RUN_DIR
    atexit.register(shutil.rmtree, _RUN_DIR, True)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
IS_ROOT = os.geteuid() == 0

needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root: the lab creates network namespaces (CI runs as root)")
needs_iperf3 = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed (scripts/test.sh installs it)")
needs_iperf2 = pytest.mark.skipif(shutil.which("iperf") is None, reason="iperf (iperf2) not installed (scripts/test.sh installs it)")


@pytest.fixture(scope="module")
def hostwide_lock() -> Iterator[None]:
    """These tests change host-wide values of this machine: never alongside another run of them
    (two test processes would each take the other's value for the original). Held for a whole
    module; modules ask for it with `pytestmark = hostwide`."""
    import fcntl

    with open("/run/lock/nettune-tests-hostwide.lock" if os.path.isdir("/run/lock") else "/tmp/nettune-tests-hostwide.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


hostwide = pytest.mark.usefixtures("hostwide_lock")


def nettune(*args: str, timeout: float = 300, check: bool = False, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess, as a user would (`env` adds to the environment)."""
    env = dict(os.environ, COLUMNS="250") | (env or {})  # wide enough that tables show every column
    p = subprocess.run([sys.executable, "-m", "nettune.cli", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"nettune {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def _present() -> dict[str, list[str]]:
    """Our namespaces, links and iperf processes on this machine now."""
    from nettune.targets.lab.labnet import leftovers

    found = leftovers()
    found.pop("labs", None)
    ours = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            # a zombie is already dead: after kill -9 of nettune its children are reparented
            # to PID 1, and this sandbox's PID 1 does not reap them
            try:  # a run beside this one in its own PID namespace (scripts/isolated.sh) is not ours
                same_ns = os.readlink(f"/proc/{pid}/ns/pid") == os.readlink("/proc/self/ns/pid")
            except OSError:
                continue
            if comm in ("iperf3", "iperf") and state != "Z" and same_ns and int(pid) != os.getpid():
                ours.append(f"{pid}:{comm}")
    found["iperf processes"] = ours
    return found


# What was there before this session began: a run killed with its tests (a CI job cancelled,
# a machine restarted mid-suite) leaves its lab, and every leftover check of the next session
# would fail on it. Told once in the summary; `nettune lab down` removes it.
_BEFORE: dict[str, list[str]] = {}


def pytest_sessionstart(session: pytest.Session) -> None:
    if IS_ROOT:
        _BEFORE.update(_present())


def pytest_terminal_summary(terminalreporter) -> None:  # shown with -q too, at the end
    found = {k: v for k, v in _BEFORE.items() if v}
    if found:
        terminalreporter.write_line(f"found before the tests began (not theirs, not counted as their leftovers; `nettune lab down` removes them): {found}")


def lab_leftovers() -> dict:
    """What tests must never leave behind: our namespaces, links and processes that were not
    there when the session began."""
    now = _present()
    return {k: new for k, v in now.items() if (new := [x for x in v if x not in _BEFORE.get(k, ())])}


def write_study(tmp_path: Path, text: str, name: str = "study.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.fixture(scope="session")
def pg_cluster():
    """A throwaway PostgreSQL cluster for the whole session (tests/pg_cluster.py): started
    from the distribution's package on a Unix socket in a temporary directory, stopped by
    PID at the end; the tests that need it skip, saying why, where it cannot start."""
    import pg_cluster as pgc

    try:
        cluster = pgc.start()
    except pgc.Unavailable as e:
        pytest.skip(f"no PostgreSQL here: {e}")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """The URL of a new, empty database of the session's cluster."""
    return pg_cluster.new_database()
