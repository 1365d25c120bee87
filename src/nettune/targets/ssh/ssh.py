"""The ssh target: real machines over SSH (asyncssh), one connection per host per study.

asyncssh runs on an event loop in a background thread; SshHost's methods are blocking
wrappers around it, so engines, probes and knobs use a remote host exactly like a lab
one, from any thread (parallel pairs). Every command is an argv list joined with
shlex (plus `sudo -n --` when sudo = true): a study file value is always one quoted word
for the remote shell, never shell syntax.

Host keys, the private key file and sudo are checked as sshtrust.py says: a key pinned
in the host's known_hosts (else ~/.ssh/known_hosts) always wins over nettune's file of
keys trusted on first use; an unknown host is refused unless trust_on_first_use = true
(then its key is recorded, logged and stored in the host's facts); a changed key is
always refused. With sudo = true, `sudo -n true` must work, checked once per connection.
The key each connection saw is kept (reach()), so the knob journal can say how to reach
the host again and `nettune restore` can insist on that very key (host_key=).

Short commands (run, read_text, listening...) go to one helper `sh` per connection
(sshshell.py), so sampling costs no new session; spawned processes get their own
session under a wrapper that reports the remote PID and the tool's exact CPU (sshproc.py).

A dropped connection (sshd killed, network cut, keepalive timeout) ends every process of
that host with `lost` set to the reason; run.driver.run_test turns that, or a
ConnectionError from spawn/run, into a failed result. The next call reconnects, and
first kills (by PID, if still the same program) the processes the lost connection left.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import re
import shlex
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import asyncssh

from ..base import CommandResult, TargetBase
from ..facts import linux_facts
from ..freebsd import freebsd_facts
from ..shell_host import ShellHostBase
from .sshproc import ENV_PREAMBLE, WRAPPER, EventLoopThread, SshProc
from .sshshell import RemoteShell, ShellGone
from .ssh_error import SshError as SshError
from .sshconnect import hop_where, ssh_connect
from .sshtrust import openssh_line, record_first_use, sudo_problem, tofu_file
from ...record.point_state import PointState

log = logging.getLogger("nettune.ssh")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SshHost(ShellHostBase):
    def __init__(self, name: str, spec: Any, loop: EventLoopThread, tofu: bool = False, connect_timeout: float = 10.0,
                 reconnect_timeout: float = 0.0, host_key: str | None = None, jump_keys: list[str | None] | None = None):
        self.name, self.spec = name, spec
        self.address: str = spec.address
        self.role: str = spec.role
        self.interface: str | None = spec.interface  # default device of interface knobs
        self.allow_reboot, self.reboot_timeout = spec.allow_reboot, spec.reboot_timeout  # boot-time knobs (targets/reboot.py)
        self.override_boot_dropins: bool = spec.override_boot_dropins  # and the files they may edit (knobs/bootloader.py)
        self.os = "linux"
        self.connects = 0
        self.host_key_note: str | None = None
        self._expected_key = host_key  # only this key is accepted (nettune restore)
        self._server_key: Any = None  # the host key the last connection saw
        self._login: str | None = None  # the user the last connection logged in as
        self._trust_file: str | None = None
        self._loop, self._tofu, self._timeout = loop, tofu, connect_timeout
        self._reconnect_timeout = reconnect_timeout
        if spec.connect_timeout:
            self._timeout = spec.connect_timeout  # ssh_config ConnectTimeout / inventory ansible_timeout
        self._jump_keys = list(jump_keys or [])  # nettune restore: the key each hop showed
        self._hops: list[Any] = []  # open connections to the jump hosts, first hop first
        self._hop_keys: dict[int, Any] = {}
        self._down = False  # the last reconnect window ran out: try once, fail fast
        self._conn: Any = None
        self._shell: RemoteShell | None = None
        self._shell_ok = True  # False once a helper shell failed to start: a session per command
        self._lock: asyncio.Lock | None = None
        self._live: dict[int, SshProc] = {}
        self._orphans: dict[int, str] = {}

    # -- connection ------------------------------------------------------------------
    def _call(self, coro: Any, timeout: float) -> Any:
        try:
            return self._loop.call(coro, timeout + self._timeout + self._reconnect_timeout + 5)
        except concurrent.futures.TimeoutError:
            conn = self._conn
            if conn is not None:
                self._loop.loop.call_soon_threadsafe(conn.abort)  # hung: drop it, reconnect next time
            raise SshError(f"{self.name} ({self.address}) stopped answering; the connection was dropped") from None

    @property
    def where(self) -> str:
        s = self.spec
        via = f" via {', '.join(h.name for h in s.jump)}" if s.jump else ""
        return f"{self.name} ({s.user + '@' if s.user else ''}{self.address}:{s.port}{via})"

    async def _connection(self) -> Any:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._conn is not None and not self._conn.is_closed():
                if self._shell_ok and (self._shell is None or self._shell.dead):
                    await self._start_shell(self._conn)
                return self._conn
            self._conn = None
            conn = await (self._connect() if self.connects == 0 else self._reconnect())
            self.connects += 1
            try:
                if self.spec.sudo:
                    await self._check_sudo(conn)
                await self._start_shell(conn)
                if self.connects == 1:
                    r = await self._exec(conn, ["uname", "-s"], 15)
                    self.os = "freebsd" if r.stdout.strip() == "FreeBSD" else "linux"
                if self._orphans:
                    await self._kill_orphans(conn)
            except BaseException:
                conn.close()  # lost again while setting up: the next call starts over
                raise
            self._conn = conn
            return conn

    async def _reconnect(self) -> Any:
        """After a lost connection: retry while the host may be rebooting (a VM restarted
        by a queue knob, re-created lab host) for up to reconnect_timeout seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (0.0 if self._down else self._reconnect_timeout)
        while True:
            try:
                conn = await self._connect()
            except SshError as e:
                if not e.retry or loop.time() >= deadline:
                    self._down = True
                    raise
                await asyncio.sleep(1.0)
                continue
            self._down = False
            return conn

    async def _connect(self) -> Any:
        s = self.spec
        guessed = s.unresolved + [u for h in s.jump for u in h.unresolved]
        if guessed:  # read without running a Match exec: its values may not be ssh's
            raise SshError(f"{self.where}: not connected: {guessed[0]} (this study was read without running it; "
                           "nettune run, and nettune hosts when it connects, run it)")
        await self._close_hops()
        tunnel = None
        for i, hop in enumerate(s.jump):  # each hop checked like a host, the next reached through it
            tofu = self._tofu if hop.trust_on_first_use is None else hop.trust_on_first_use
            expected = self._jump_keys[i] if i < len(self._jump_keys) else None
            opened = await ssh_connect(hop_where(hop, self.name), hop, tofu, hop.connect_timeout or self._timeout, expected, tunnel)
            if opened.record:
                self._record_first_use(opened.conn.get_server_host_key(), hop.address, hop.port)
            self._hops.append(opened.conn)
            self._hop_keys[i] = opened.conn.get_server_host_key()
            tunnel = opened.conn
        tofu = self._tofu if s.trust_on_first_use is None else s.trust_on_first_use
        opened = await ssh_connect(self.where, s, tofu, self._timeout, self._expected_key, tunnel)
        conn = opened.conn
        if opened.record:
            self._record_first_use(conn.get_server_host_key(), self.address, s.port)
        self._server_key, self._trust_file = conn.get_server_host_key(), opened.trust_file
        self._login = conn.get_extra_info("username")
        return conn

    async def _close_hops(self) -> None:
        hops, self._hops = self._hops, []
        for c in reversed(hops):
            c.close()

    async def _check_sudo(self, conn: Any) -> None:
        """sudo = true: `sudo -n true` must work, else say why (never "tool not installed")."""
        try:
            r = await conn.run("sudo -n true", check=False, timeout=self._timeout + 15, stdin=asyncssh.DEVNULL, encoding="utf-8", errors="replace")
        except (asyncssh.Error, OSError, asyncio.TimeoutError) as e:
            raise SshError(f"{self.where}: cannot check sudo: {str(e) or type(e).__name__}") from None
        problem = sudo_problem(self.where, self._login or "?", 255 if r.returncode is None else r.returncode, str(r.stderr or ""))
        if problem:
            raise SshError(problem)

    def reach(self) -> dict[str, Any]:
        """How to reach this host again without the study file (for the knob journal)."""
        s, key = self.spec, self._server_key
        return {
            "address": self.address, "port": s.port, "user": self._login or s.user,
            "key": os.path.abspath(os.path.expanduser(s.key)) if s.key else None, "known_hosts": self._trust_file,
            "more_keys": list(s.more_keys), "more_known_hosts": list(s.more_known_hosts), "agent_path": s.agent_path,
            "sudo": s.sudo, "connect_timeout": self._timeout,
            "host_key": openssh_line(key) if key is not None else None,
            "host_key_fingerprint": key.get_fingerprint() if key is not None else None,
            "agent": s.agent,
            "jump": [{"name": h.name, "address": h.address, "port": h.port, "user": h.user, "agent": h.agent,
                      "key": os.path.abspath(os.path.expanduser(h.key)) if h.key else None, "known_hosts": h.known_hosts,
                      "more_keys": list(h.more_keys), "more_known_hosts": list(h.more_known_hosts), "agent_path": h.agent_path,
                      "host_key": openssh_line(self._hop_keys[i]) if i in self._hop_keys else None}
                     for i, h in enumerate(s.jump)],
        }

    def _record_first_use(self, key: Any, address: str, port: int) -> None:
        note = record_first_use(address, port, key)
        self.host_key_note = note if address == self.address else f"jump host {address}: {note}"
        log.warning("%s (%s): host key %s", self.name, address, note)

    async def _start_shell(self, conn: Any) -> None:
        self._shell = await RemoteShell.start(conn, "sudo -n sh" if self.spec.sudo else "sh", self._timeout)
        if self._shell is None:
            self._shell_ok = False
            log.info("%s: no helper shell; one SSH session per command", self.name)

    async def _kill_orphans(self, conn: Any) -> None:
        """Processes a lost connection left running: kill each PID if it still runs the same program."""
        script = 'c=$(ps -o comm= -p "$1" 2>/dev/null) && [ "$c" = "$2" ] && kill -KILL "$1"; true'
        for pid, comm in list(self._orphans.items()):
            await self._exec(conn, ["sh", "-c", script, "sh", str(pid), comm], 15)
            self._orphans.pop(pid, None)

    def _lost_reason(self, err: BaseException | None) -> str:
        why = str(err) if err and str(err) else (type(err).__name__ if err else "channel closed without an exit status")
        return f"ssh connection to {self.name} ({self.address}) lost: {why}"

    def _command(self, argv: list[str]) -> str:
        return shlex.join((["sudo", "-n", "--"] if self.spec.sudo else []) + [str(a) for a in argv])

    async def _exec(self, conn: Any, argv: list[str], timeout: float, input: str | None = None) -> CommandResult:
        shell = self._shell
        if input is None and shell is not None and shell.conn is conn and not shell.dead:
            try:
                rc, out, err = await shell.run(shlex.join([str(a) for a in argv]), timeout)
                return CommandResult(argv, rc, out, err)
            except ShellGone:
                pass  # connection lost (the session below says so) or the shell died: retry alone
        try:
            r = await conn.run(self._command(argv), check=False, timeout=timeout, input=input,
                               stdin=asyncssh.DEVNULL if input is None else asyncssh.PIPE, encoding="utf-8", errors="replace")
        except asyncssh.TimeoutError as e:
            return CommandResult(argv, 124, str(e.stdout or ""), str(e.stderr or "") + f"\ntimed out after {timeout:.0f}s")
        except asyncssh.ChannelOpenError as e:
            if conn.is_closed():
                raise SshError(self._lost_reason(e)) from None
            return CommandResult(argv, 255, "", f"ssh: {self.name} refused a new session: {e.reason}")
        except (asyncssh.Error, OSError) as e:
            raise SshError(self._lost_reason(e)) from None
        if r.returncode is None:
            raise SshError(self._lost_reason(None))
        return CommandResult(argv, r.returncode, str(r.stdout or ""), str(r.stderr or ""))

    async def _run(self, argv: list[str], timeout: float, input: str | None) -> CommandResult:
        return await self._exec(await self._connection(), argv, timeout, input)

    async def _spawn(self, proc: SshProc, env: dict[str, str] | None = None) -> None:
        conn = await self._connection()
        if env:
            argv = ["sh", "-c", ENV_PREAMBLE + WRAPPER, "sh", *env, "--", *proc.argv]
        else:
            argv = ["sh", "-c", WRAPPER, "sh", *proc.argv]
        try:
            p = await conn.create_process(self._command(argv), stdin=asyncssh.PIPE if env else asyncssh.DEVNULL, encoding="utf-8", errors="replace")
            if env:
                p.stdin.write("".join(v + "\n" for v in env.values()))
                p.stdin.write_eof()
            first = await asyncio.wait_for(p.stdout.readline(), self._timeout)
        except (asyncssh.Error, OSError, asyncio.TimeoutError) as e:
            raise SshError(self._lost_reason(e) if conn.is_closed() else f"{self.name}: cannot start {proc.argv[0]}: {e}") from None
        if first.strip().isdigit():
            proc.pid = int(first)
            self._live[proc.pid] = proc
        else:
            proc._out.append(first)  # the wrapper failed (e.g. sudo refused): keep what it said
        asyncio.ensure_future(proc._collect(p))

    # -- the Host protocol -------------------------------------------------------------
    def connect(self) -> None:
        self._call(self._connection(), self._timeout)

    def spawn(self, argv: list[str], env: dict[str, str] | None = None) -> SshProc:
        for k, v in (env or {}).items():
            if not ENV_NAME.match(k) or "\n" in v or "\0" in v:
                raise ValueError(f"environment variable {k!r}: a name of letters, digits and _ and a one-line value")
        proc = SshProc(self, [str(a) for a in argv])
        self._call(self._spawn(proc, env), self._timeout)
        return proc

    def run(self, argv: list[str], timeout: float = 30.0, input: str | None = None) -> CommandResult:
        r: CommandResult = self._call(self._run(argv, timeout, input), timeout)
        return r

    def write_text(self, path: str, text: str) -> None:
        r = self.run(["sh", "-c", 'cat > "$1"', "sh", path], timeout=15, input=text)
        if r.returncode != 0:
            raise OSError(f"{self.name}:{path}: {r.stderr.strip() and r.said() or 'cannot write'}")

    def listening(self, port: int, proto: str = "tcp", pid: int | None = None) -> bool:
        if self.os == "freebsd":
            r = self.run(["sockstat", "-46", "-l", "-P", proto, "-p", str(port)], timeout=15)
            return any(f":{port} " in ln + " " for ln in r.stdout.splitlines()[1:])
        return super().listening(port, proto, pid)

    def free_port(self, first: int = 5201, last: int = 5400) -> int:
        """A port nothing listens on (TCP) or is bound to (UDP) on this host."""
        return first if self.os == "freebsd" else self._free_in(first, last)

    def close(self) -> None:
        for proc in list(self._live.values()):
            proc.stop()
        conn, self._conn = self._conn, None
        if conn is not None or self._hops:
            async def shut() -> None:
                if conn is not None:
                    conn.close()
                    await conn.wait_closed()
                await self._close_hops()

            try:
                self._loop.call(shut(), 10)
            except Exception:  # already gone
                pass


class SshTarget(TargetBase):
    kind = "ssh"

    def __init__(self, study: Any):
        spec = study.target
        self.loop = EventLoopThread()
        self.hosts: dict[str, SshHost] = {
            n: SshHost(n, h, self.loop, spec.trust_on_first_use, spec.connect_timeout, spec.reconnect_timeout) for n, h in spec.hosts.items()
        }
        self._test_hosts: list[str] = list(spec.test_hosts)
        # machine CPU sampled during every test: cpu_extra["hypervisor:<name>"]
        self._extra = {f"hypervisor:{n}": self.hosts[n] for n in spec.hypervisors}
        self._closed = False
        try:
            self._connect_all()
        except BaseException:
            self.close()
            raise

    def _connect_all(self) -> None:
        async def all_hosts() -> list[Any]:
            return await asyncio.gather(*(h._connection() for h in self.hosts.values()), return_exceptions=True)

        timeout = max(h._timeout for h in self.hosts.values()) + 30
        results = self.loop.call(all_hosts(), timeout)
        errors = [str(r) for r in results if isinstance(r, BaseException)]
        if errors:
            raise SshError("; ".join(errors))

    @property
    def test_hosts(self) -> list[str]:
        return self._test_hosts

    @property
    def extra_machines(self) -> dict[str, Any]:
        return self._extra

    @property
    def warnings(self) -> list[str]:
        keys = [f"{n}: host key {h.host_key_note}" for n, h in self.hosts.items() if h.host_key_note]
        return keys + [f"{n}: inventory setting not honoured: {x}" for n, h in self.hosts.items() for x in h.spec.ignored] + \
            [f"{n}: {x}" for n, h in self.hosts.items() for x in h.spec.local_commands + [c for j in h.spec.jump for c in j.local_commands]]

    def prepare(self, resolved: Any) -> PointState:
        return PointState.model_validate({"hosts": {n: {"address": h.address, "role": h.role, "connections": h.connects}
                                                    for n, h in self.hosts.items()}})

    def facts(self) -> dict[str, dict[str, Any]]:
        def one(h: SshHost) -> dict[str, Any]:
            f = freebsd_facts(h) if h.os == "freebsd" else linux_facts(h)
            f.update(address=h.address, port=h.spec.port, user=h.spec.user, role=h.role, sudo=h.spec.sudo)
            if h.host_key_note:
                f["host_key"] = h.host_key_note
            return f

        with ThreadPoolExecutor(min(8, len(self.hosts))) as ex:
            return dict(zip(self.hosts, ex.map(one, self.hosts.values())))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            for h in self.hosts.values():
                h.close()
        finally:
            self.loop.stop()


__all__ = ["SshError", "SshHost", "SshProc", "SshTarget", "tofu_file"]
