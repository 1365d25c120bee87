"""The reading of one iperf3 test's -J output (the client's, with the server's inside it
from --get-server-output, or the server's own stdout) into a TestResult: the end sums,
each stream, each interval and each stream within it, with the sender's TCP values (cwnd,
send window, RTT, retransmits) taken from the side that sends.
"""
from __future__ import annotations

from typing import Any

from ..record.parts import ReverseDirection
from ..studyfile.models import Workload
from ..studyfile.rates import parse_rate
from .iperf3_reader import json_objects, load_json, parse_version, stream_receive_bps
from .result import Interval, IntervalStream, SideOutput, StreamResult, TestResult
from .streams import offered, rtt_cwnd, tail, total, weighted_mean


def _f(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _i(x: Any) -> int | None:
    return int(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _d(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _l(x: Any) -> list[dict[str, Any]]:
    return [e for e in x if isinstance(e, dict)] if isinstance(x, list) else []


class IperfJson:
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
        tool = res.tool
        tool.num_streams, tool.blksize = _i(ts.get("num_streams")), _i(ts.get("blksize"))
        tool.sender_tcp_congestion = end["sender_tcp_congestion"] if isinstance(end.get("sender_tcp_congestion"), str) else None
        tool.receiver_tcp_congestion = end["receiver_tcp_congestion"] if isinstance(end.get("receiver_tcp_congestion"), str) else None
        tool.sndbuf_actual, tool.rcvbuf_actual, tool.tcp_mss_default = (_i(start.get(k)) for k in ("sndbuf_actual", "rcvbuf_actual", "tcp_mss_default"))

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
                res.tool.measured_seconds = _f(recv.get("seconds")) or _f(sent.get("seconds"))
            else:
                res.reverse_sender_bps, res.reverse_receiver_bps, res.reverse_retransmits = s_bps, r_bps, retr
                res.reverse = ReverseDirection(sender_bytes=_i(sent.get("bytes")), receiver_bytes=_i(recv.get("bytes")))
            if self.udp:
                # the receiver's view (3.11+ sum_received); the legacy sum carries it too
                u = recv if "lost_packets" in recv else legacy
                loss = {
                    "jitter_ms": _f(u.get("jitter_ms")),
                    "lost_packets": _i(u.get("lost_packets")),
                    "packets": _i(u.get("packets")),
                    "lost_percent": _f(u.get("lost_percent")),
                }
                target = res if fwd else res.reverse
                for k, v in loss.items():
                    setattr(target, k, v)

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
                    sr.receiver_bytes, sr.receiver_bps = rb, stream_receive_bps(rb, rs, res.tool.measured_seconds)
                sr.jitter_ms, sr.lost_packets = _f(u.get("jitter_ms")), _i(u.get("lost_packets"))
                sr.packets, sr.lost_percent = _i(u.get("packets")), _f(u.get("lost_percent"))
                res.tool.udp_out_of_order = (res.tool.udp_out_of_order or 0) + (_i(u.get("out_of_order")) or 0)
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
                if (_i(info.get("max_snd_wnd")) or 0) > 0:  # iperf3 3.12+
                    sr.max_snd_wnd = _i(info.get("max_snd_wnd"))
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
            self.res.reverse = (self.res.reverse or ReverseDirection()).model_copy(update=agg)

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
                        streams=self._interval_streams(mine, info, client_sends),
                    )
                )

    def _interval_streams(self, mine: list[dict[str, Any]], info: list[dict[str, Any]], client_sends: bool) -> list[IntervalStream]:
        """Each stream of one interval, keyed by the client's socket (StreamResult.id); its
        TCP values from the sending side's record (the server's, matched by socket, when
        the server sends)."""
        by_client_sock = {self.srv_sock.get(c): c for c in self.srv_sock} if not client_sends else {}
        tcp = {(_i(st.get("socket")) if client_sends else by_client_sock.get(st.get("socket"))): st for st in info}
        out = []
        for st in mine:
            sid = _i(st.get("socket")) or 0
            t = _d(tcp.get(sid)) if not self.udp else {}
            out.append(IntervalStream(id=sid, bps=_f(st.get("bits_per_second")) or 0.0, bytes=_i(st.get("bytes")),
                                      retransmits=_i(t.get("retransmits")), cwnd=_i(t.get("snd_cwnd")) or None,
                                      snd_wnd=_i(t.get("snd_wnd")) or None, rtt_us=_f(t.get("rtt")) or None,
                                      rttvar_us=_f(t.get("rttvar")) or None, pmtu=_i(t.get("pmtu")) or None,
                                      omitted=bool(st.get("omitted", False))))
        return out

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
