"""iperf3: command lines and the parser for its -J (JSON) output.

The client runs with --get-server-output so the server's own JSON comes back inside
the client's: in reverse and bidir tests the server is the sender, and only its side
knows the real congestion window and RTT (the client reports 0 or its own receiving
socket's values there, esnet/iperf #1491).
"""
from __future__ import annotations

from typing import Any

from ..studyfile.models import Workload
from ..studyfile.rates import parse_rate, rate_arg
from .access import Access, Iperf3Credentials, iperf3_has_auth
from .base import EngineBase
from .iperf3_reader import json_objects, load_json, parse_version, version_tuple, stream_receive_bps
from .result import Interval, SideOutput, StreamResult, TestResult
from .streams import offered, rtt_cwnd, tail, total, weighted_mean

MAX_STREAMS = 128  # MAX_STREAMS in iperf3's iperf.h; -P above it is refused
IDLE_TIMEOUT_S = 30  # how long a one-off server waits for its client before giving up
_BUSY = "the server is busy running a test"
OAEP_SINCE = (3, 17)  # credentials padding: PKCS#1 v1.5 before, OAEP from 3.17 (CVE-2024-26306)
# A client error that means our client never reached a server ready for it: with the
# server's own error object in its output, another connection (a port scan, a client
# that gave up) ended the one-off server first, and a fresh server is worth a retry.
_ENDED_BY_A_CLIENT = "from client"  # "unable to receive parameters from client" (IERECVPARAMS)
_NEVER_STARTED = ("unable to connect to server", "unable to send cookie", "unable to receive control message", "control socket has closed unexpectedly")


def _f(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _i(x: Any) -> int | None:
    return int(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _d(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _l(x: Any) -> list[dict[str, Any]]:
    return [e for e in x if isinstance(e, dict)] if isinstance(x, list) else []


def interval_args(wl: Workload) -> list[str]:
    """-i N when the workload sets an interval (iperf3's default is 1 s); on both sides, so
    the server's intervals (the sender's TCP_INFO with -R) line up with the client's."""
    return [] if wl.interval is None else ["-i", f"{float(wl.interval):g}"]


class Iperf3Engine(EngineBase):
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

    def warnings(self, wl: Workload) -> tuple[Workload, list[str]]:
        if isinstance(wl.parallel, int) and wl.parallel > MAX_STREAMS:
            msg = f"iperf3 allows at most {MAX_STREAMS} streams (-P); asked for {wl.parallel}, ran {MAX_STREAMS}"
            return wl.model_copy(update={"parallel": MAX_STREAMS}), [msg]
        return wl, []

    def parse(self, wl: Workload, client: SideOutput, server: SideOutput) -> TestResult:
        dur = wl.duration if isinstance(wl.duration, (int, float)) else None
        res = TestResult(engine=self.name, protocol=str(wl.protocol), duration=None if dur is None else float(dur))
        try:
            _Parse(wl, res).run(client, server)
        except Exception as e:  # noqa: BLE001 - a parser must not take a study down; say why
            res.ok = False
            res.error = f"could not read iperf3 output: {type(e).__name__}: {e}"
        return res


class _Parse:
    """One parse: the client's JSON, the server's (embedded or its own stdout)."""

    def __init__(self, wl: Workload, res: TestResult) -> None:
        self.wl, self.res = wl, res
        self.reverse = wl.reverse is True

    def run(self, client: SideOutput, server: SideOutput) -> None:
        res = self.res
        doc, why = load_json(client.stdout)
        if doc is None:
            res.ok = False
            err = tail(client.stderr)
            res.error = f"iperf3 client: {why}" + (f"; stderr: {err}" if err else "")
            return
        start, end = _d(doc.get("start")), _d(doc.get("end"))
        res.tool_version = parse_version(str(start.get("version", "")))
        ts = _d(start.get("test_start"))
        if ts.get("protocol"):
            res.protocol = str(ts["protocol"]).lower()
        self.reverse = bool(ts.get("reverse", self.reverse))
        self.udp = res.protocol == "udp"
        if doc.get("error"):
            res.ok = False
            res.error = f"iperf3: {doc['error']}"
        if not any(k in end for k in ("sum_sent", "sum_received", "sum")):
            if res.ok:
                res.ok = False
                res.error = "iperf3 JSON has no end summary (the test did not complete)"
            return
        self.sdoc = self._server_doc(doc, server)
        self._map_server_streams(start, _d(self.sdoc.get("start")))
        self._sums(end)
        self._streams(doc, end)
        self._intervals(doc)
        if res.sender_bps is None and res.receiver_bps is None:
            res.ok = False
            res.error = res.error or "iperf3 JSON end summary has no bits_per_second"
        elif res.receiver_bps is None:
            res.warnings.append("no receiver-side throughput in the iperf3 output")
        # the rate each stream was asked for: iperf3's own record (-b, or its UDP default);
        # 0 is "unlimited" (TCP without -b)
        asked = _f(ts.get("target_bitrate"))
        if asked is None and self.wl.bitrate is not None:
            asked = float(parse_rate(self.wl.bitrate))
        offered(res, asked, _i(ts.get("num_streams")) or (self.wl.parallel if isinstance(self.wl.parallel, int) else 1))
        cpu = _d(end.get("cpu_utilization_percent"))
        res.tool_cpu = {k: float(v) for k, v in cpu.items() if _f(v) is not None}
        extra = res.extra
        extra["num_streams"] = _i(ts.get("num_streams"))
        extra["blksize"] = _i(ts.get("blksize"))
        for k in ("sender_tcp_congestion", "receiver_tcp_congestion"):
            if isinstance(end.get(k), str):
                extra[k] = end[k]
        for k in ("sndbuf_actual", "rcvbuf_actual", "tcp_mss_default"):
            if _i(start.get(k)) is not None:
                extra[k] = _i(start[k])

    def _server_doc(self, doc: dict[str, Any], server: SideOutput) -> dict[str, Any]:
        sdoc = doc.get("server_output_json")
        if isinstance(sdoc, dict):
            return sdoc
        # the server's own -J output holds the same; its last object is our test (an
        # intruder's refused attempt comes first)
        sdoc = next((o for o in reversed(json_objects(server.stdout)) if _d(o.get("end"))), None)
        if sdoc is None and (self.reverse or self.wl.bidir is True) and not self.udp:
            self.res.warnings.append("no server output: sender-side cwnd/RTT unknown for server->client streams (iperf3 #1491)")
        return sdoc or {}

    def _map_server_streams(self, cstart: dict[str, Any], sstart: dict[str, Any]) -> None:
        """Client socket -> server socket of the same connection, by the client's port
        (socket numbers differ on each side)."""
        by_port = {c.get("remote_port"): c.get("socket") for c in _l(sstart.get("connected"))}
        self.srv_sock: dict[Any, Any] = {}
        for c in _l(cstart.get("connected")):
            if c.get("local_port") in by_port:
                self.srv_sock[c.get("socket")] = by_port[c.get("local_port")]

    def _direction(self, client_sends: bool) -> str:
        # "forward" is the main direction: client->server, or server->client with -R
        return "forward" if client_sends != self.reverse else "reverse"

    def _sums(self, end: dict[str, Any]) -> None:
        res = self.res
        for suffix, fwd in (("", True), ("_bidir_reverse", False)):
            sent, recv = _d(end.get("sum_sent" + suffix)), _d(end.get("sum_received" + suffix))
            legacy = _d(end.get("sum" + suffix))  # UDP; before 3.11 the only UDP summary
            if not (sent or recv or legacy):
                continue
            if not sent and legacy:
                sent = legacy
            s_bps, r_bps = _f(sent.get("bits_per_second")), _f(recv.get("bits_per_second"))
            retr = _i(sent.get("retransmits"))
            if fwd:
                res.sender_bps, res.receiver_bps, res.retransmits = s_bps, r_bps, retr
                res.sender_bytes, res.receiver_bytes = _i(sent.get("bytes")), _i(recv.get("bytes"))
                res.extra["measured_seconds"] = _f(recv.get("seconds")) or _f(sent.get("seconds"))
            else:
                res.reverse_sender_bps, res.reverse_receiver_bps, res.reverse_retransmits = s_bps, r_bps, retr
                res.extra["reverse"] = {"sender_bytes": _i(sent.get("bytes")), "receiver_bytes": _i(recv.get("bytes"))}
            if self.udp:
                # the receiver's view (3.11+ sum_received); the legacy sum carries it too
                u = recv if "lost_packets" in recv else legacy
                loss = {
                    "jitter_ms": _f(u.get("jitter_ms")),
                    "lost_packets": _i(u.get("lost_packets")),
                    "packets": _i(u.get("packets")),
                    "lost_percent": _f(u.get("lost_percent")),
                }
                if fwd:
                    for k, v in loss.items():
                        setattr(res, k, v)
                else:
                    res.extra["reverse"].update(loss)

    def _server_end_stream(self, sock: Any) -> dict[str, Any]:
        ssock = self.srv_sock.get(sock)
        for s in _l(_d(self.sdoc.get("end")).get("streams")):
            rec = _d(s.get("udp")) or _d(s.get("sender"))
            if ssock is not None and rec.get("socket") == ssock:
                return _d(s)
        return {}

    def _recv_interval_totals(self, doc: dict[str, Any]) -> dict[Any, tuple[int, float]]:
        """socket -> (bytes, seconds) received over the non-omitted intervals of `doc`
        (UDP end records carry only the sending side's bytes)."""
        out: dict[Any, tuple[int, float]] = {}
        for iv in _l(doc.get("intervals")):
            for st in _l(iv.get("streams")):
                if st.get("sender") or st.get("omitted"):
                    continue
                b, s = out.get(st.get("socket"), (0, 0.0))
                out[st.get("socket")] = (b + (_i(st.get("bytes")) or 0), s + (_f(st.get("seconds")) or 0.0))
        return out

    def _streams(self, doc: dict[str, Any], end: dict[str, Any]) -> None:
        res = self.res
        c_recv, s_recv = self._recv_interval_totals(doc), self._recv_interval_totals(self.sdoc)
        for s in _l(end.get("streams")):
            if self.udp:
                u = _d(s.get("udp"))
                sock, client_sends = u.get("socket"), bool(u.get("sender", not self.reverse))
                sr = StreamResult(id=_i(sock) or 0, direction=self._direction(client_sends))
                srv_u = _d(self._server_end_stream(sock).get("udp"))
                snd = u if client_sends else srv_u
                sr.sender_bps, sr.sender_bytes = _f(snd.get("bits_per_second")), _i(snd.get("bytes"))
                rb, rs = (s_recv.get(self.srv_sock.get(sock)) if client_sends else c_recv.get(sock)) or (None, 0.0)
                if rb is not None and rs > 0:
                    sr.receiver_bytes, sr.receiver_bps = rb, stream_receive_bps(rb, rs, _f(res.extra.get("measured_seconds")))
                sr.jitter_ms, sr.lost_packets = _f(u.get("jitter_ms")), _i(u.get("lost_packets"))
                sr.packets, sr.lost_percent = _i(u.get("packets")), _f(u.get("lost_percent"))
                res.extra["udp_out_of_order"] = res.extra.get("udp_out_of_order", 0) + (_i(u.get("out_of_order")) or 0)
            else:
                snd, rcv = _d(s.get("sender")), _d(s.get("receiver"))
                sock, client_sends = snd.get("socket"), bool(snd.get("sender", not self.reverse))
                sr = StreamResult(id=_i(sock) or 0, direction=self._direction(client_sends))
                sr.sender_bps, sr.sender_bytes = _f(snd.get("bits_per_second")), _i(snd.get("bytes"))
                sr.receiver_bps, sr.receiver_bytes = _f(rcv.get("bits_per_second")), _i(rcv.get("bytes"))
                # sender-side TCP_INFO lives where the sender runs: the server for its streams
                info = snd if client_sends else _d(self._server_end_stream(sock).get("sender"))
                sr.retransmits = _i(info.get("retransmits"))
                if sr.retransmits is None:
                    sr.retransmits = _i(snd.get("retransmits"))
                if (_i(info.get("max_snd_cwnd")) or 0) > 0:
                    sr.max_cwnd = _i(info.get("max_snd_cwnd"))
                    sr.rtt_mean_us, sr.rtt_min_us, sr.rtt_max_us = (_f(info.get(k)) for k in ("mean_rtt", "min_rtt", "max_rtt"))
            res.streams.append(sr)
        for direction in ("forward", "reverse"):
            self._stream_aggregates(direction, [s for s in res.streams if s.direction == direction])

    def _stream_aggregates(self, direction: str, streams: list[StreamResult]) -> None:
        if not streams:
            return
        agg = rtt_cwnd(streams)
        if direction == "forward":
            for k, v in agg.items():
                setattr(self.res, k, v)
            if self.res.receiver_bps is None:
                self.res.receiver_bps = total(s.receiver_bps for s in streams)  # UDP before 3.11
        else:
            self.res.extra.setdefault("reverse", {}).update(agg)

    def _intervals(self, doc: dict[str, Any]) -> None:
        s_ivs = _l(self.sdoc.get("intervals"))
        for n, iv in enumerate(_l(doc.get("intervals"))):
            streams = _l(iv.get("streams"))
            srv_iv = self._matching(s_ivs, n, _f(_d(iv.get("sum")).get("start")))
            for key in ("sum", "sum_bidir_reverse"):
                summ = _d(iv.get(key))
                if not summ:
                    continue
                client_sends = bool(summ.get("sender", not self.reverse))
                mine = [st for st in streams if bool(st.get("sender")) == client_sends]
                # TCP_INFO of the sending side: client records, or the server's for its streams
                info = mine if client_sends else [st for st in _l(srv_iv.get("streams")) if st.get("sender")]
                retr = [r for r in (_i(st.get("retransmits")) for st in info) if r is not None]
                cw = [c for c in (_i(st.get("snd_cwnd")) for st in info) if c]
                rtts = [(float(st["rtt"]), float(_i(st.get("bytes")) or 0)) for st in info if _f(st.get("rtt"))]
                self.res.intervals.append(
                    Interval(
                        start=_f(summ.get("start")) or 0.0,
                        end=_f(summ.get("end")) or 0.0,
                        bps=_f(summ.get("bits_per_second")) or 0.0,
                        direction=self._direction(client_sends),
                        retransmits=sum(retr) if retr and not self.udp else None,
                        cwnd=max(cw) if cw else None,
                        rtt_us=weighted_mean(rtts),
                        omitted=bool(summ.get("omitted", False)),
                        stream_bps=[_f(st.get("bits_per_second")) or 0.0 for st in mine],
                    )
                )

    @staticmethod
    def _matching(ivs: list[dict[str, Any]], n: int, start: float | None) -> dict[str, Any]:
        """The server interval covering the same second as the client's n-th one."""
        def st(iv: dict[str, Any]) -> float | None:
            return _f(_d(iv.get("sum")).get("start"))

        if n < len(ivs) and (start is None or abs((st(ivs[n]) or 0.0) - start) < 0.5):
            return ivs[n]
        if start is not None:
            for iv in ivs:
                if abs((st(iv) or -9.0) - start) < 0.5:
                    return iv
        return {}
