"""iperf3: command lines, and the parser for its -J (JSON) output (iperf3_parse.py).

The client runs with --get-server-output so the server's own JSON comes back inside
the client's: in reverse and bidir tests the server is the sender, and only its side
knows the real congestion window and RTT (the client reports 0 or its own receiving
socket's values there, esnet/iperf #1491).
"""
from __future__ import annotations


from ..studyfile.models import Workload
from ..studyfile.rates import rate_arg
from .access import Access, Iperf3Credentials, iperf3_has_auth
from .base import NetworkEngineBase
from .iperf3_reader import json_objects, load_json, parse_version, version_tuple
from .iperf3_parse import IperfJson
from .result import SideOutput, TestResult

MAX_STREAMS = 128  # MAX_STREAMS in iperf3's iperf.h; -P above it is refused
IDLE_TIMEOUT_S = 30  # how long a one-off server waits for its client before giving up
_BUSY = "the server is busy running a test"
OAEP_SINCE = (3, 17)  # credentials padding: PKCS#1 v1.5 before, OAEP from 3.17 (CVE-2024-26306)
# A client error that means our client never reached a server ready for it: with the
# server's own error object in its output, another connection (a port scan, a client
# that gave up) ended the one-off server first, and a fresh server is worth a retry.
_ENDED_BY_A_CLIENT = "from client"  # "unable to receive parameters from client" (IERECVPARAMS)
_NEVER_STARTED = ("unable to connect to server", "unable to send cookie", "unable to receive control message", "control socket has closed unexpectedly")


def interval_args(wl: Workload) -> list[str]:
    """-i N when the workload sets an interval (iperf3's default is 1 s); on both sides, so
    the server's intervals (the sender's TCP_INFO with -R) line up with the client's."""
    return [] if wl.interval is None else ["-i", f"{float(wl.interval):g}"]


class Iperf3Engine(NetworkEngineBase):
    name = "iperf3"
    binary = "iperf3"
    install_hint = "apt-get install iperf3 (or: nettune setup)"
    server_exits = True
    auth = "password"  # user, password and RSA key (engines/access.py)

    def version(self, version_output: str) -> str:
        return parse_version(version_output)

    def version_argv(self) -> list[str]:
        return [self.binary, "--version"]

    def auth_probe_argv(self) -> list[str]:
        return self.version_argv()  # lists "authentication" among its optional features

    def auth_available(self, probe_output: str) -> bool:
        return iperf3_has_auth(probe_output)

    def auth_missing(self, hosts: list[str], required: bool) -> str:
        if required:
            return (f"iperf3 on {', '.join(hosts)} has no authentication (`iperf3 --version` does not list it among its "
                    "optional features: built without OpenSSL, or too old)")
        return f"iperf3 on {', '.join(hosts)} has no authentication: tests with it run without credentials"

    def credential_files(self, side: str) -> tuple[str, ...]:
        return ("private.pem", "users.csv") if side == "server" else ("public.pem",)

    def password_access(self, bind: str | None, creds: Iperf3Credentials, server_dir: str, client_dir: str,
                        server_version: str, client_version: str) -> Access:
        # the 3.17+ side of a pair whose other side is older pads with PKCS#1 v1.5 (access.py)
        new_s, new_c = version_tuple(server_version) >= OAEP_SINCE, version_tuple(client_version) >= OAEP_SINCE
        return Access(bind=bind, user=creds.user, password=creds.password, private_key=f"{server_dir}/private.pem",
                      users_file=f"{server_dir}/users.csv", public_key=f"{client_dir}/public.pem",
                      server_pkcs1=new_s and not new_c, client_pkcs1=new_c and not new_s)

    def server_argv(self, wl: Workload, port: int, tool_version: str, access: Access | None = None) -> list[str]:
        argv = [self.binary, "-s", "-1", "-J", "-p", str(port), *interval_args(wl)]
        # --idle-timeout exists since 3.10 (#1101), but only from 3.11 does a one-off
        # server exit when it expires (#1197) instead of waiting again. Unknown version:
        # leave it out, an unknown option would stop the server.
        if version_tuple(tool_version) >= (3, 11):
            argv += ["--idle-timeout", str(IDLE_TIMEOUT_S)]
        if access is not None and access.bind:
            argv += ["-B", access.bind]
        if access is not None and access.iperf3_auth:
            argv += ["--rsa-private-key-path", str(access.private_key), "--authorized-users-path", str(access.users_file)]
            if access.server_pkcs1:
                argv.append("--use-pkcs1-padding")
        return argv

    def client_argv(self, wl: Workload, server_address: str, port: int, tool_version: str, access: Access | None = None) -> list[str]:
        argv = [self.binary, "-c", server_address, "-p", str(port), "-J", "-t", str(wl.duration), "-P", str(wl.parallel), *interval_args(wl)]
        if wl.protocol == "udp":
            argv.append("-u")
        if wl.bitrate is not None:
            argv += ["-b", rate_arg(wl.bitrate)]  # bits/s (spec.rates); TCP too: iperf3 paces TCP when asked
        if wl.reverse is True:
            argv.append("-R")
        if wl.bidir is True:
            argv.append("--bidir")
        if isinstance(wl.omit, int) and wl.omit > 0:
            argv += ["-O", str(wl.omit)]
        if wl.window is not None:
            argv += ["-w", str(wl.window)]
        if wl.congestion:
            argv += ["-C", str(wl.congestion)]
        if wl.length is not None:
            argv += ["-l", str(wl.length)]
        argv.append("--get-server-output")
        if access is not None and access.iperf3_auth:
            argv += ["--username", str(access.user), "--rsa-public-key-path", str(access.public_key)]
            if access.client_pkcs1:
                argv.append("--use-pkcs1-padding")
        return argv

    def client_env(self, access: Access | None) -> dict[str, str]:
        """The client's password goes in its environment, never on a command line."""
        return {"IPERF3_PASSWORD": access.password} if access is not None and access.iperf3_auth and access.password else {}

    def listen_proto(self, wl: Workload) -> str:
        return "tcp"  # the control connection is TCP even for UDP tests

    def busy(self, client: SideOutput) -> bool:
        doc, _ = load_json(client.stdout)
        err = str(doc.get("error", "")) if doc else ""
        return _BUSY in err.lower() or _BUSY in (client.stderr or "").lower() or (doc is None and _BUSY in (client.stdout or "").lower())

    def taken(self, client: SideOutput | None, server: SideOutput) -> bool:
        """True when another connection ended the one-off server before our client
        reached it (measured with 3.12: a connection that closes without a word makes
        `iperf3 -s -1` print "unable to receive parameters from client" and exit; our
        client then gets "unable to connect" or a reset, or never started: client None).
        A failed *authentication* does not end it: iperf3 does not count that connection."""
        if _ENDED_BY_A_CLIENT not in (server.stdout or "").lower():  # the usual case, without decoding
            return False
        if not any(_ENDED_BY_A_CLIENT in str(o.get("error", "")).lower() for o in json_objects(server.stdout)):
            return False
        if client is None:
            return True
        doc, _ = load_json(client.stdout)
        err = (str(doc.get("error", "")) if doc else "") + " " + (client.stderr or "")
        return any(s in err.lower() for s in _NEVER_STARTED)

    def server_error(self, server: SideOutput) -> str:
        # with -J the reason is in the JSON ("error - unable to start listener for connections:
        # Address already in use"); stderr only has "iperf3: exiting"
        said = [str(o["error"]) for o in json_objects(server.stdout or "") if o.get("error")]
        return said[-1] if said else super().server_error(server)

    def warnings(self, wl: Workload) -> tuple[Workload, list[str]]:
        if isinstance(wl.parallel, int) and wl.parallel > MAX_STREAMS:
            msg = f"iperf3 allows at most {MAX_STREAMS} streams (-P); asked for {wl.parallel}, ran {MAX_STREAMS}"
            return wl.model_copy(update={"parallel": MAX_STREAMS}), [msg]
        return wl, []

    def parse(self, wl: Workload, client: SideOutput, server: SideOutput) -> TestResult:
        dur = wl.duration if isinstance(wl.duration, (int, float)) else None
        res = TestResult(engine=self.name, protocol=str(wl.protocol), duration=None if dur is None else float(dur))
        try:
            IperfJson(wl, res).run(client, server)
        except Exception as e:  # noqa: BLE001 - a parser must not take a study down; say why
            res.ok = False
            res.error = f"could not read iperf3 output: {type(e).__name__}: {e}"
        return res
