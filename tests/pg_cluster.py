"""A throwaway PostgreSQL cluster for the store tests, from the distribution's package.

Debian's `postgresql` puts initdb and pg_ctl in /usr/lib/postgresql/<version>/bin (Fedora's
postgresql-server in /usr/bin). The cluster lives in a temporary directory owned by a
non-root user (`postgres` where the package created it, else `nobody`: the server refuses
to run as root), listens on a Unix socket in that directory only (no TCP port, nothing
another helper or test could reach or collide with), trusts local connections, and is
stopped by the PID its postmaster.pid names; the directory goes with it.

`start()` raises `Unavailable` with the reason when it cannot start; the session fixture
(tests/conftest.py `pg_cluster`) turns that into a skip naming it.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote


class Unavailable(Exception):
    """Why no cluster could be started here."""


def binaries() -> Path | None:
    """The directory holding initdb and pg_ctl (the newest version installed)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name)
                   if Path(p).parent.parent.name.isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    path = shutil.which("initdb")
    return Path(path).parent if path and shutil.which("pg_ctl") else None


def _user() -> tuple[int, int] | None:
    """(uid, gid) to run the server as: None when not root (then as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return pw.pw_uid, pw.pw_gid
    raise Unavailable("running as root and neither a 'postgres' nor a 'nobody' user exists to run the server as")


@dataclass
class Cluster:
    dir: Path
    bin: Path
    owner: tuple[int, int] | None
    pid: int = 0
    counter: int = 0

    @property
    def socket_dir(self) -> Path:
        return self.dir / "sock"

    def url(self, dbname: str = "postgres") -> str:
        """A libpq URL to a database of this cluster, through its Unix socket."""
        return f"postgresql://nettune@/{dbname}?host={quote(str(self.socket_dir), safe='')}"

    def _run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
        kw: dict = {"user": self.owner[0], "group": self.owner[1], "extra_groups": []} if self.owner else {}
        return subprocess.run([str(self.bin / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=timeout,
                              cwd=self.dir, **kw)

    def start(self) -> None:
        data, log = self.dir / "data", self.dir / "server.log"
        self.socket_dir.mkdir(mode=0o700)
        if self.owner:
            for p in (self.dir, self.socket_dir):
                os.chown(p, *self.owner)
        p = self._run("initdb", "-D", str(data), "-U", "nettune", "--auth=trust", "--encoding=UTF8", "--no-instructions")
        if p.returncode:
            raise Unavailable(f"initdb failed: {(p.stderr or p.stdout).strip().splitlines()[-1:]}")
        opts = (f"-k {self.socket_dir} -c listen_addresses='' -c fsync=off -c full_page_writes=off -c max_connections=60 "
                "-c shared_buffers=32MB")
        p = self._run("pg_ctl", "-D", str(data), "-o", opts, "-l", str(log), "-w", "-t", "60", "start")
        pidfile = data / "postmaster.pid"
        if pidfile.exists():
            self.pid = int(pidfile.read_text().split()[0])
        if p.returncode:
            text = log.read_text()[-500:] if log.exists() else p.stderr
            self.stop()
            raise Unavailable(f"pg_ctl start failed: {' '.join(text.split())}")

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        self.counter += 1
        name = f"t{os.getpid()}_{self.counter}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server by its PID (immediate shutdown, then SIGKILL if it lingers); remove the directory."""
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGQUIT)  # immediate shutdown: a throwaway cluster needs no checkpoint
                for _ in range(300):
                    if not _alive(self.pid):
                        break
                    time.sleep(0.1)
                else:
                    os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.pid = 0
        shutil.rmtree(self.dir, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Is the postmaster still running? A zombie is not: where the tests run as PID 1 of a
    PID namespace (/work/isolated.sh) the orphaned postmaster is ours to reap."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if state != "Z":
        return True
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    return False


def start() -> Cluster:
    """A running cluster, or Unavailable saying why not."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise Unavailable("psycopg is not installed (pip install 'nettune[postgresql]'; scripts/test.sh installs it)") from None
    where = binaries()
    if where is None:
        raise Unavailable("PostgreSQL's initdb/pg_ctl not found (apt-get install postgresql; scripts/test.sh installs it in the shard that runs these tests)")
    owner = _user()
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="nettune-pg-")), where, owner)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster
