"""Test servers nobody else can use (issue 8, item 5), on the real lab with real tools.

A third lab host, "intruder", plays another machine on the same network. Hooks on
LabHost.spawn (the thinnest layer: they only watch and then act from the intruder's
namespace) run it at the moments that matter: just after nettune's server listens
(before nettune's client), and while nettune's test runs. Studies are named h5-* on
198.19.216.0/24.
"""
from __future__ import annotations

import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import needs_iperf2, needs_iperf3, needs_root
from nettune import load_study
from nettune.store.writer import StoreWriter
from nettune.run.study import run_study
from nettune.engines.access import SECRET
from nettune.targets.lab import lab as labmod
from nettune.targets.lab.labnet import LabLayout

pytestmark = [needs_root, needs_iperf3]

SUBNET = "198.19.216.0/24"
HOSTS = ["server", "client", "intruder"]


def study_file(tmp_path: Path, name: str, workload: str) -> Path:
    f = tmp_path / f"{name}.toml"
    f.write_text(f'name = "{name}"\n[target]\nkind = "lab"\nhosts = {json.dumps(HOSTS)}\nsubnet = "{SUBNET}"\n[workload]\nserver = "server"\nclient = "client"\n{workload}\n')
    return f


def layout(name: str) -> LabLayout:
    return LabLayout(name, HOSTS, ipaddress.ip_network(SUBNET))


def in_ns(lay: LabLayout, host: str, argv: list[str], timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", lay.ns(host), *argv], capture_output=True, text=True, timeout=timeout)


def port_of(argv: list[str]) -> int:
    return int(argv[argv.index("-p") + 1])


def listeners(pid: int, port: int) -> list[str]:
    """Local addresses (dotted) of the TCP sockets in LISTEN state on `port`, as the
    process's own network namespace shows them."""
    out = []
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        addr, p = f[1].split(":")
        if int(p, 16) == port and f[3] == "0A":
            out.append(socket.inet_ntoa(bytes.fromhex(addr)[::-1]))
    return out


def established(pid: int, port: int) -> int:
    n = 0
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        if int(f[1].split(":")[1], 16) == port and f[3] == "01":
            n += 1
    return n


class Watch:
    """Records every process nettune spawns on the lab (argv, env, pid) and calls
    `on_server(proc, argv)` once the server listens and `on_client(proc, argv)` once the
    client's data connection is up (each at most `times` times)."""

    def __init__(self, on_server: Callable[..., None] | None = None, on_client: Callable[..., None] | None = None, times: int = 1):
        self.on_server, self.on_client, self.times = on_server, on_client, times
        self.spawned: list[dict[str, Any]] = []
        self.threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []
        self._orig = labmod.LabHost.spawn

    def __enter__(self) -> "Watch":
        watch = self

        def spawn(host: Any, argv: list[str], env: dict[str, str] | None = None) -> Any:
            p = watch._orig(host, argv, env)
            role = "server" if "-s" in argv[:2] else "client" if "-c" in argv[:2] else "other"
            watch.spawned.append({"role": role, "argv": list(argv), "env": dict(env or {}), "pid": p.pid, "host": host.name})
            n = sum(s["role"] == role for s in watch.spawned)
            if role == "server" and watch.on_server and n <= watch.times:
                _until(lambda: p.poll() is not None or listeners(p.pid, port_of(argv)))
                watch.on_server(p, argv)
            if role == "client" and watch.on_client and n <= watch.times:
                srv = [s for s in watch.spawned if s["role"] == "server"][-1]
                t = threading.Thread(target=watch._guard, args=(srv, p, argv))
                t.start()
                watch.threads.append(t)
            return p

        labmod.LabHost.spawn = spawn  # type: ignore[method-assign]
        return self

    def _guard(self, srv: dict[str, Any], p: Any, argv: list[str]) -> None:
        try:
            conns = 2 if argv[0] == "iperf3" else 1  # iperf3: control + data connection
            _until(lambda: p.poll() is not None or established(srv["pid"], port_of(argv)) >= conns)
            if p.poll() is None:
                self.on_client(p, argv)  # type: ignore[misc]
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.errors.append(e)

    def __exit__(self, *exc: Any) -> None:
        labmod.LabHost.spawn = self._orig  # type: ignore[method-assign]
        for t in self.threads:
            t.join(60)
        assert not self.errors, self.errors

    def of(self, role: str) -> list[dict[str, Any]]:
        return [s for s in self.spawned if s["role"] == role]


def _until(cond: Callable[[], Any], limit: float = 15.0) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end and not cond():
        time.sleep(0.01)


def run(f: Path, db: Path) -> tuple[Any, list[dict[str, Any]], StoreWriter]:
    store = StoreWriter(db)
    out = run_study(load_study(f), store, f.read_text(), str(f))
    return out, store.runs(out.study_id), store


def db_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists())


def iperf3_intruder(lay: LabLayout, port: int) -> dict[str, Any]:
    """An iperf3 client from another lab host, with no credentials."""
    r = in_ns(lay, "intruder", ["iperf3", "-c", lay.address("server"), "-p", str(port), "-t", "1", "-J"])
    return json.loads(r.stdout)


def test_iperf3_refuses_other_hosts_and_keeps_secrets(tmp_path: Path) -> None:
    name = "h5-auth3"
    lay = layout(name)
    f = study_file(tmp_path, name, "engine = \"iperf3\"\nduration = 3\nparallel = 2\n")
    seen: dict[str, Any] = {}

    def before_our_client(p: Any, argv: list[str]) -> None:
        port = port_of(argv)
        # bound to the test address only: nothing listens on the namespace's loopback
        seen["listeners"] = listeners(p.pid, port)
        seen["loopback"] = in_ns(lay, "server", [sys.executable, "-c", f"import socket; socket.create_connection(('127.0.0.1', {port}), 2)"]).stderr
        seen["first"] = iperf3_intruder(lay, port)

    def during_our_test(p: Any, argv: list[str]) -> None:
        seen["cmdline"] = Path(f"/proc/{p.pid}/cmdline").read_bytes()
        seen["environ"] = Path(f"/proc/{p.pid}/environ").read_bytes()
        seen["during"] = iperf3_intruder(lay, port_of(argv))

    db = tmp_path / "r.db"
    with Watch(before_our_client, during_our_test) as w:
        out, runs, store = run(f, db)
    assert out.status == "done" and len(runs) == 1
    res = runs[0]
    assert res["ok"], res["error"]
    # the intruder ran no test, before or during ours
    assert seen["first"]["error"] == "test authorization failed" and not seen["first"]["end"]
    assert "busy" in seen["during"]["error"] and not seen["during"]["end"]
    assert seen["listeners"] == [lay.address("server")]
    assert "ConnectionRefusedError" in seen["loopback"]
    # our test: complete, its numbers those of its own output, no retry was needed
    raw = {r["side"]: r for r in store.raw_outputs(res["id"])}
    doc = json.loads(raw["client"]["stdout"])
    assert res["receiver_bps"] == pytest.approx(doc["end"]["sum_received"]["bits_per_second"]) and res["receiver_bps"] > 1e6
    assert len(res["streams"]) == 2 and not res["warnings"]
    assert res["extra"]["server_access"] == {"bind": lay.address("server"), "auth": "iperf3-rsa"}
    assert "--username" in raw["client"]["command"] and "--authorized-users-path" in raw["server"]["command"]
    # the password: in the client's environment only, nowhere stored
    password = w.of("client")[0]["env"]["IPERF3_PASSWORD"]
    assert len(password) >= 20 and password.encode() not in seen["cmdline"] and f"IPERF3_PASSWORD={password}".encode() in seen["environ"]
    store.close()
    assert password.encode() not in db_bytes(db)
    # the credential files were private and are gone
    keydir = Path(raw["server"]["command"][raw["server"]["command"].index("--rsa-private-key-path") + 1]).parent
    assert str(keydir).startswith("/tmp/nettune-auth.") and not keydir.exists()


def test_a_scan_that_ends_the_one_off_server_is_retried(tmp_path: Path) -> None:
    """Measured with 3.12: a connection that closes without a word ends `iperf3 -s -1`
    (credentials or not). nettune sees why its client failed and starts a new server."""
    name = "h5-scan"
    lay = layout(name)
    f = study_file(tmp_path, name, "duration = 1\n")

    def scan(p: Any, argv: list[str]) -> None:
        in_ns(lay, "intruder", [sys.executable, "-c", f"import socket; socket.create_connection(('{lay.address('server')}', {port_of(argv)}), 2).close()"])
        _until(lambda: p.poll() is not None)  # the one-off server is gone before our client starts

    with Watch(on_server=scan) as w:
        out, runs, store = run(f, tmp_path / "r.db")
    store.close()
    assert runs[0]["ok"], runs[0]["error"]
    assert any("ended the one-off server" in x and "retried" in x for x in runs[0]["warnings"])
    assert len(w.of("server")) == 2


def test_fanned_out_test_is_retried_whole_when_one_server_is_taken(tmp_path: Path) -> None:
    """processes = 2: a scan ends the first of the two one-off servers before the clients
    start; a sum missing one process would be wrong, so the whole test runs again."""
    name = "h5-fanscan"
    lay = layout(name)
    f = study_file(tmp_path, name, 'engine = "iperf3"\nprocesses = 2\nparallel = 2\nduration = 1\n')

    def scan(p: Any, argv: list[str]) -> None:
        in_ns(lay, "intruder", [sys.executable, "-c", f"import socket; socket.create_connection(('{lay.address('server')}', {port_of(argv)}), 2).close()"])
        _until(lambda: p.poll() is not None)

    with Watch(on_server=scan) as w:
        out, runs, store = run(f, tmp_path / "r.db")
    store.close()
    assert runs[0]["ok"], runs[0]["error"]
    assert any("ended the one-off server" in x and "one of 2 processes" in x and "retried" in x for x in runs[0]["warnings"])
    assert len(w.of("server")) == 4 and len(w.of("client")) == 2  # two servers per attempt; clients only in the second


def test_auth_false_is_the_old_behaviour(tmp_path: Path) -> None:
    """Without credentials a client from another host can use the server first; nettune
    then finds it busy and retries (what issue 8 saw)."""
    name = "h5-noauth"
    lay = layout(name)
    f = study_file(tmp_path, name, "duration = 1\nauth = false\n")
    seen: dict[str, Any] = {}

    def intruder_first(p: Any, argv: list[str]) -> None:
        # started in the background: our client connects while the intruder's test runs
        seen["proc"] = subprocess.Popen(["ip", "netns", "exec", lay.ns("intruder"), "iperf3", "-c", lay.address("server"), "-p", str(port_of(argv)), "-t", "2", "-J"], stdout=subprocess.PIPE, text=True)
        _until(lambda: established(p.pid, port_of(argv)) >= 2)

    with Watch(on_server=intruder_first) as w:
        out, runs, store = run(f, tmp_path / "r.db")
        intruder = json.loads(seen["proc"].communicate(timeout=30)[0])
    store.close()
    assert intruder["end"]["sum_received"]["bits_per_second"] > 0  # the intruder ran a full test
    assert runs[0]["ok"] and any("server busy" in x for x in runs[0]["warnings"])
    srv, cli = w.of("server")[0]["argv"], w.of("client")[0]["argv"]
    assert "--authorized-users-path" not in srv and "--username" not in cli and not w.of("client")[0]["env"]
    assert runs[0]["extra"]["server_access"] == {"bind": lay.address("server"), "auth": None}


@needs_iperf2
def test_iperf2_permit_key_refuses_other_hosts(tmp_path: Path) -> None:
    """TCP -P 1 gets a permit key: another host's client is dropped. -P 2 gets none
    (2.1.8 loses streams with one): another host's traffic is served but not counted.
    Between tests no iperf2 server is left, failed tests included."""
    name = "h5-auth2"
    lay = layout(name)
    # length 3G: the 2.1.8 client crashes (SIGSEGV) while its server runs, a failure path
    f = study_file(tmp_path, name, 'engine = "iperf2"\nduration = 3\nparallel = "{p}"\nlength = "{len}"\n[sweep]\np = [1, 2]\nlen = ["128K", "3G"]\n')
    intruders: list[str] = []
    between: list[list[int]] = []

    def during_our_test(p: Any, argv: list[str]) -> None:
        r = in_ns(lay, "intruder", ["iperf", "-c", lay.address("server"), "-p", str(port_of(argv)), "-t", "1", "-y", "C"])
        intruders.append(r.stdout + r.stderr)

    orig_add = StoreWriter.add_run

    def add_run(self: StoreWriter, *a: Any, **k: Any) -> int:
        between.append([pid for pid in _ns_pids(lay, "server") if _comm(pid) == "iperf"])
        return orig_add(self, *a, **k)

    StoreWriter.add_run = add_run  # type: ignore[method-assign]
    try:
        with Watch(on_client=during_our_test, times=4) as w:
            out, runs, store = run(f, tmp_path / "r.db")
    finally:
        StoreWriter.add_run = orig_add  # type: ignore[method-assign]
    db = tmp_path / "r.db"
    by = {(r["point"]["p"], r["point"]["len"]): r for r in runs}
    keyed, open_ = by[(1, "128K")], by[(2, "128K")]
    assert keyed["ok"] and open_["ok"], (keyed["error"], open_["error"])
    assert not by[(1, "3G")]["ok"] and not by[(2, "3G")]["ok"]
    assert between == [[]] * 4  # no server outlived its test, failed ones included
    assert keyed["extra"]["server_access"] == {"bind": lay.address("server"), "auth": "permit-key"}
    assert open_["extra"]["server_access"]["auth"] is None
    intruder_addr = lay.address("intruder")
    keyed_srv = {r["side"]: r for r in store.raw_outputs(keyed["id"])}["server"]
    open_srv = {r["side"]: r for r in store.raw_outputs(open_["id"])}["server"]
    # dropped before anything was counted: iperf 2.1.8's text report (issue 11) logs the
    # refused connection, and only that
    assert all("(permit key fail)" in ln for ln in keyed_srv["stdout"].splitlines() if intruder_addr in ln)
    assert intruder_addr in open_srv["stdout"] and any("not from nettune's client" in x for x in open_["warnings"])
    assert len(keyed["streams"]) == 1 and len(open_["streams"]) == 2
    assert not any("not from nettune's client" in x for x in keyed["warnings"])
    key_arg = next(a for a in w.of("server")[0]["argv"] if a.startswith("--permit-key="))
    key = key_arg.split("=", 1)[1]
    assert f"--permit-key={SECRET}" in keyed_srv["command"]
    store.close()
    assert len(key) >= 16 and key.encode() not in db_bytes(db)


def _ns_pids(lay: LabLayout, host: str) -> list[int]:
    from nettune.targets.lab.labnet import pids_in_namespace

    return pids_in_namespace(lay.ns(host))


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _iperf3_without_auth(tmp_path: Path) -> dict[str, str]:
    """PATH with an `iperf3` whose --version does not list authentication (a build
    without OpenSSL, played by hiding the word) and which otherwise is the real one."""
    real = subprocess.run(["sh", "-c", "command -v iperf3"], capture_output=True, text=True).stdout.strip()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "iperf3").write_text(f'#!/bin/sh\ncase "$1" in --version|-v) {real} --version | sed "s/, authentication//; s/authentication, //"; exit 0;; esac\nexec {real} "$@"\n')
    (bindir / "iperf3").chmod(0o755)
    return dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", COLUMNS="250")


def test_auth_switch_on_a_build_without_authentication(tmp_path: Path) -> None:
    env = _iperf3_without_auth(tmp_path)
    assert "authentication" not in subprocess.run(["iperf3", "--version"], capture_output=True, text=True, env=env).stdout
    f = tmp_path / "s.toml"
    text = 'name = "h5-switch"\n[target]\nkind = "local"\n[workload]\nduration = 1\nauth = {}\n'
    f.write_text(text.format("true"))
    cmd = [sys.executable, "-m", "nettune.cli", "run", str(f), "--db", str(tmp_path / "r.db")]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.strip().splitlines() == [p.stderr.strip()] and "workload.auth" in p.stderr and "iperf3 on client, server has no authentication" in p.stderr
    with StoreWriter(tmp_path / "r.db") as st:
        assert st.studies() == []  # refused before the study began
    # auto: the test runs, without credentials, and says so
    f.write_text(text.format('"auto"'))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "has no authentication: tests with it run without credentials" in p.stdout + p.stderr
    with StoreWriter(tmp_path / "r.db") as s:
        runs = s.runs(s.find_study("h5-switch")["id"])
    assert runs[0]["ok"] and runs[0]["extra"]["server_access"] == {"bind": "127.0.0.1", "auth": None}


def dry_run(f: Path) -> str:
    """The plan, wide enough that no command is folded."""
    p = subprocess.run([sys.executable, "-m", "nettune.cli", "run", str(f), "--dry-run"], capture_output=True, text=True, env=dict(os.environ, COLUMNS="2000"), timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_dry_run_shows_the_options_not_the_secrets(tmp_path: Path) -> None:
    f = study_file(tmp_path, "h5-dry", "duration = 1\n")
    out = dry_run(f)
    assert "-B 198.19.216.10" in out and "--rsa-private-key-path" in out and "--authorized-users-path" in out
    assert "IPERF3_PASSWORD=<password> iperf3 -c" in out and "--username '<user>'" in out
    f2 = study_file(tmp_path, "h5-dry2", 'engine = "iperf2"\nduration = 1\n')
    out2 = dry_run(f2)
    assert out2.count("--permit-key=<key>") == 3 and "-B 198.19.216.10" in out2  # server, client, and the warm-up test's client
    f3 = study_file(tmp_path, "h5-dry3", "duration = 1\nauth = false\n")
    out3 = dry_run(f3)
    assert "--username" not in out3 and "IPERF3_PASSWORD" not in out3 and "auth = false" in out3


def test_padding_is_what_nettune_assumes_for_this_version(tmp_path: Path) -> None:
    """The installed client's credentials token, caught by a listener that speaks just
    enough of iperf3's control protocol (cookie, PARAM_EXCHANGE, parameters JSON),
    decrypts with the padding nettune assumes for its version: PKCS#1 v1.5 before 3.17,
    OAEP from 3.17 (where --use-pkcs1-padding bridges older peers)."""
    import base64
    import struct

    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding

    from nettune.engines.access import new_iperf3_credentials
    from nettune.engines.iperf3 import OAEP_SINCE, parse_version, version_tuple

    creds = new_iperf3_credentials()
    (tmp_path / "public.pem").write_text(creds.public_pem)
    version = parse_version(subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout)
    with socket.socket() as ls:
        ls.bind(("127.0.0.1", 0))
        ls.listen(1)
        cli = subprocess.Popen(["iperf3", "-c", "127.0.0.1", "-p", str(ls.getsockname()[1]), "-t", "1", "-J", "--username", creds.user,
                                "--rsa-public-key-path", str(tmp_path / "public.pem")], env=dict(os.environ, IPERF3_PASSWORD=creds.password),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            ls.settimeout(10)
            c, _ = ls.accept()
            with c:
                c.settimeout(10)
                _read(c, 37)  # the cookie
                c.sendall(bytes([9]))  # PARAM_EXCHANGE
                params = json.loads(_read(c, struct.unpack("!I", _read(c, 4))[0]))
        finally:
            cli.kill()
            cli.wait()
    token = base64.b64decode(params["authtoken"])
    key = serialization.load_pem_private_key(creds.private_pem.encode(), None)
    oaep = padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None)
    right, wrong = (oaep, padding.PKCS1v15()) if version_tuple(version) >= OAEP_SINCE else (padding.PKCS1v15(), oaep)
    plain = key.decrypt(token, right).decode()  # type: ignore[union-attr]
    assert f"user: {creds.user}" in plain and creds.password in plain
    with pytest.raises(ValueError):
        key.decrypt(token, wrong)  # type: ignore[union-attr]


def _read(c: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = c.recv(n - len(data))
        if not chunk:
            raise ConnectionError("iperf3 client closed early")
        data += chunk
    return data


@needs_iperf2
def test_iperf2_server_stops_by_itself_when_nettune_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    """An iperf2 server never exits after a test; if nettune dies (kill -9, a lost SSH
    connection) its -t ends it anyway, keyed or not. Lifetime shortened for the test."""
    from nettune.engines import iperf2
    from nettune.engines.access import Access
    from nettune.studyfile.models import Workload

    monkeypatch.setattr(iperf2, "SERVER_LIFETIME_SLACK", 2)
    eng = iperf2.Iperf2Engine()
    wl = Workload(engine="iperf2", duration=1, timeout=1)
    life = eng.server_lifetime(wl)
    for acc in (Access(bind="127.0.0.1"), Access(bind="127.0.0.1", permit_key="k" * 16)):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        p = subprocess.Popen(eng.server_argv(wl, port, "2.1.8", acc), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert p.wait(life + 15) == 0  # it ended by itself
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_credentials_removed_on_interrupt(tmp_path: Path, sig: int) -> None:
    """Ctrl-C and SIGTERM remove them at once; after kill -9 the directory was recorded
    and what `nettune lab down` (and the next run) calls removes it."""
    name = f"h5-sig{int(sig)}"
    lay = layout(name)
    f = study_file(tmp_path, name, "duration = 5\n")
    p = subprocess.Popen([sys.executable, "-m", "nettune.cli", "run", str(f), "--db", str(tmp_path / "r.db")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    keydir = None
    try:
        end = time.monotonic() + 60
        while keydir is None and time.monotonic() < end and p.poll() is None:
            for pid in _ns_pids(lay, "server"):
                try:
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
                except OSError:
                    continue
                if "--rsa-private-key-path" in argv:
                    keydir = Path(argv[argv.index("--rsa-private-key-path") + 1]).parent
            time.sleep(0.05)
        assert keydir is not None and keydir.is_dir()
        assert oct(keydir.stat().st_mode & 0o777) == "0o700" and all(oct(x.stat().st_mode & 0o777) == "0o600" for x in keydir.iterdir())
        p.send_signal(sig)
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    if sig == signal.SIGKILL:
        from nettune.run.credentials import DIR_PREFIX
        from nettune.targets.lab.labnet import LabNet
        from nettune.targets.procs import remove_stale_dirs, stop_recorded

        assert keydir.exists()  # nothing could run after kill -9
        stop_recorded()  # our own run directory's records only (NETTUNE_RUN_DIR)
        LabNet(lay).down()
        assert str(keydir) in remove_stale_dirs(DIR_PREFIX)
    assert p.returncode != 0 and not keydir.exists()
    assert not _ns_pids(lay, "server")
