"""One study's test-server access: `[workload] auth` and `bind` made into an Access per test.

Before the study (check): which hosts' tools can require credentials (each engine says
how to ask: `iperf3 --version` lists "authentication"; `iperf --help` lists
--permit-key); auth = true on a host or a workload that cannot is refused here, before
anything is created. Then, once per study, what the engine's `auth` scheme needs: an RSA
key pair, user and password ("password", iperf3), or a permit key ("permit_key",
iperf2). The first time a host serves (or runs a client), its files go to a private
directory on it (mktemp -d, mode 0700; files 0600) through the Host protocol, so SSH
hosts get theirs over SSH; `close` removes every directory, on success, error, Ctrl-C
and SIGTERM alike (run_study's finally). After kill -9 a /tmp/nettune-auth.* directory
stays behind: on targets whose hosts are this machine (the spec's on_this_machine: lab,
local) each one is recorded with its owner and removed by the next run or `nettune lab
down`; on SSH hosts it stays (it holds only that study's one-time credentials, useless
once its servers are gone).
"""
from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass

from ..engines import network_engine
from ..engines.access import Access, Iperf3Credentials, new_iperf3_credentials, new_permit_key
from ..engines.base import Engine
from ..errors import SpecError
from ..plan.points import ResolvedPoint
from ..studyfile.models import Study
from ..studyfile.workload import Workload
from ..targets.base import Host, Target
from ..targets.procs import forget_dir, record_dir, remove_stale_dirs
from .workloads import workload_hosts, workload_run

DIR_PREFIX = "/tmp/nettune-auth."


@dataclass
class _Tool:
    version: str
    can_auth: bool


class StudyAccess:
    def __init__(self, study: Study, target: Target, resolved: list[ResolvedPoint], spec_file: str = "<study>"):
        self.target, self.file = target, spec_file
        self.auth = study.workload.auth  # "auto", True or False: the same for every point
        self.workloads = [rp.workload for rp in resolved]
        self.tools: dict[tuple[str, str], _Tool] = {}  # (engine, host) -> what it can do
        self.creds: Iperf3Credentials | None = None
        self.permit_key: str | None = None
        self._dirs: dict[str, str] = {}  # host -> its private directory
        self._installed: set[tuple[str, str]] = set()  # (host, file name)
        self._gone: dict[str, list[str]] = {}  # host -> directories a restart emptied (removed at close too)
        self._lock = threading.Lock()
        self.local = study.target.on_this_machine  # hosts' files are this machine's

    # -- before the study ------------------------------------------------------------
    def check(self) -> list[str]:
        """Probe every host's tool once; refuse auth = true where it cannot hold; make
        the credentials. Returns notes for the user (what is not protected, and why)."""
        notes: list[str] = []
        remove_stale_dirs(DIR_PREFIX)  # what runs killed with -9 left on this machine
        if self.auth is False:
            return ["auth = false: test servers accept any client that reaches their address"]
        for wl in self.workloads:
            self._admit(wl, notes)
        return notes

    def admit(self, wl: Workload) -> str | None:
        """A workload the study did not plan (cross-check's other engine or fan-out): its
        tools are probed and its credentials made as for the study's own, so its servers
        are protected the same way. Returns why it cannot be when auth = true (then it
        must not run unprotected), else None."""
        if self.auth is False:
            return None
        try:
            self._admit(wl, [])
        except SpecError as e:
            return e.problem
        return None

    def _admit(self, wl: Workload, notes: list[str]) -> None:
        engine = workload_run(wl).server_engine(wl)
        if engine is None:  # its tests start no server (a timed command): nothing to protect
            return
        for name in workload_hosts(wl, self.target):
            self._probe(engine, name)
        probed = [h for (e, h) in self.tools if e == engine.name]
        lacking = sorted(h for (e, h), t in self.tools.items() if e == engine.name and not t.can_auth)
        if engine.auth == "password":  # per pair: hosts that can use the credentials, the others not
            if lacking and self.auth is True:
                raise SpecError(self.file, "workload.auth", f"true, but {engine.auth_missing(lacking, True)}; use auth = \"auto\" or false")
            msg = engine.auth_missing(lacking, False)
            if lacking and msg not in notes:
                notes.append(msg)
            if self.creds is None and len(lacking) < len(probed):
                self.creds = new_iperf3_credentials()
        else:  # one key for the whole workload, or none
            why = engine.permit_key_usable(wl)
            if lacking:
                why = why or engine.auth_missing(lacking, self.auth is True)
            if why and self.auth is True:
                raise SpecError(self.file, "workload.auth", f"true, but {why}; use auth = \"auto\" or false")
            if why and why not in notes:
                notes.append(why)
            if not why and self.permit_key is None:
                self.permit_key = new_permit_key()

    def _probe(self, engine: Engine, name: str) -> None:
        if (engine.name, name) in self.tools:
            return
        argv = engine.auth_probe_argv()
        if not argv:  # a tool that never requires credentials
            self.tools[(engine.name, name)] = _Tool("", False)
            return
        r = self.target.hosts[name].probe_run(argv, timeout=10)  # a lab host's namespace does not exist yet
        out = r.stdout + r.stderr
        self.tools[(engine.name, name)] = _Tool(engine.version(out), engine.auth_available(out))

    # -- per test --------------------------------------------------------------------
    def for_test(self, wl: Workload, server: Host, client: Host) -> Access:
        bind = server.address if wl.bind else None
        if self.auth is False:
            return Access(bind=bind)
        engine = network_engine(str(wl.engine))  # only a network test has a server
        s, c = self.tools.get((engine.name, server.name)), self.tools.get((engine.name, client.name))
        if engine.auth == "password":
            if self.creds is None or s is None or c is None or not (s.can_auth and c.can_auth):
                return Access(bind=bind)
            sdir, cdir = self._install(server, engine.credential_files("server")), self._install(client, engine.credential_files("client"))
            return engine.password_access(bind, self.creds, sdir, cdir, s.version, c.version)
        usable = engine.permit_key_usable(wl) is None
        if self.permit_key and usable and all(t and t.can_auth for t in (s, c)):
            return Access(bind=bind, permit_key=self.permit_key)
        return Access(bind=bind)

    def _install(self, host: Host, files: tuple[str, ...]) -> str:
        """The host's private directory, with `files` in it (made on first use; made anew
        when a restart took them away: a VM restarted by a knob comes back with an empty
        /tmp, which tmpfs or Debian's tmpfiles.d clean at boot)."""
        with self._lock:
            d = self._dirs.get(host.name)
            if d is not None and not self.local and any((host.name, f) in self._installed for f in files):
                r = host.run(["sh", "-c", 'for f; do [ -f "$f" ] || exit 1; done', "sh", *[f"{d}/{f}" for f in files]], timeout=15)
                if r.returncode != 0:  # gone since: a new directory (mkdir never reuses a name)
                    self._gone.setdefault(host.name, []).append(d)
                    self._installed -= {(host.name, f) for f in self._content_names}
                    del self._dirs[host.name]
                    d = None
            if d is None:
                # Named here and recorded BEFORE it exists, so a kill -9 at any moment leaves
                # nothing unrecorded; mkdir refuses a name that exists (no symlink games in /tmp).
                d = DIR_PREFIX + secrets.token_hex(6)
                if self.local:  # on this machine: a killed run's directory is found again
                    record_dir(d)
                r = host.run(["mkdir", "-m", "700", "--", d], timeout=15)
                if r.returncode != 0:
                    if self.local:
                        forget_dir(d)
                    raise ConnectionError(f"{host.name}: cannot make a private directory for the test credentials: {(r.stderr or r.stdout).strip()[:200]}")
                self._dirs[host.name] = d
            for f in files:
                if (host.name, f) in self._installed:
                    continue
                path = f"{d}/{f}"
                host.write_text(path, self._content(f))  # in a 0700 directory: nobody else can open it
                r = host.run(["chmod", "600", path], timeout=15)
                if r.returncode != 0:
                    raise ConnectionError(f"{host.name}: cannot chmod 600 {path}: {r.stderr.strip()[:200]}")
                self._installed.add((host.name, f))
            return d

    _content_names = ("private.pem", "public.pem", "users.csv")

    def _content(self, name: str) -> str:
        assert self.creds is not None
        return {"private.pem": self.creds.private_pem, "public.pem": self.creds.public_pem, "users.csv": self.creds.users_file()}[name]

    # -- after the study ---------------------------------------------------------------
    def close(self) -> list[str]:
        """Remove every host's directory; warnings for those that could not be."""
        warnings: list[str] = []
        with self._lock:
            for name, old in self._gone.items():  # emptied by a restart; a host whose /tmp survives keeps them
                for d in old:
                    try:
                        self.target.hosts[name].run(["rm", "-rf", "--", d], timeout=15)
                    except (ConnectionError, OSError):
                        pass
            self._gone.clear()
            for name, d in list(self._dirs.items()):
                try:
                    r = self.target.hosts[name].run(["rm", "-rf", "--", d], timeout=15)
                    ok, why = r.returncode == 0, r.stderr.strip()
                except (ConnectionError, OSError) as e:
                    ok, why = False, str(e)
                if ok:
                    del self._dirs[name]
                    if self.local:
                        forget_dir(d)
                else:
                    warnings.append(f"could not remove the test credentials {d} on {name} ({why[:120]}); remove it by hand")
        return warnings
