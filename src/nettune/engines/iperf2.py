"""iperf2: command lines and the parser for its reports: the enhanced text (-e -i 1 -f b)
that 2.1.x runs with, and CSV (-y C) for 2.2 on and for imported files.

Why text on 2.1: 2.1.8 ignores -e together with -y C, so its CSV has no retries, cwnd, RTT
or write/read counts; its enhanced text has them (engines.iperf2_enhanced reads it into the
same rows as the CSV, so everything below serves both).

What 2.1.8's CSV really prints (checked on this machine; see tests/fixtures/iperf2):
- -y C ignores -e: rows are the 9 basic columns (TCP) or 14 (UDP), never the write/
  retry/cwnd/RTT extras, and there are no sum rows, even with -P. 2.2 (per its source,
  not run here) prints a header row, istart/iend in two columns, -e extras and sum rows
  (transfer id < 0): both layouts are read, the 2.2 one by its header names.
- rows name the sender first in 2.1.8 (with -R the client's rows read server->client;
  --full-duplex receive rows on the client read "server,port,::,0"). That order is what
  splits a --full-duplex output into its two directions; -R and plain tests take the
  direction from the workload, which does not depend on it.
- the server prints only final rows (no -i), timestamped 19700101000000; it does not exit
  by itself, and its final rows appear as soon as each stream ends.
- with -y C the UDP client suppresses the server's relay report: its final row says
  datagrams -1, jitter 0, so jitter/loss come from the receiver's (server's) rows.
- transfer ids are per side (client 1..N, server its own), so streams are matched by the
  client's port. The client exits 0 even when it cannot connect.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ..studyfile.models import Workload
from ..studyfile.rates import parse_rate, rate_arg
from .access import Access
from .base import NetworkEngineBase, client_budget
from .iperf2_reader import Row, parse_rows, parse_version
from .iperf2_enhanced import is_text, parse_text_rows
from ..record.parts import ReverseDirection
from .result import Interval, IntervalStream, SideOutput, StreamResult, TestResult
from .streams import offered, rtt_cwnd, tail, total, weighted_mean

# 2.1.8 drops connections with --permit-key when -P > 1 ("read key failed: Resource
# temporarily unavailable"; measured on the lab: -P 4 lost streams in 8 of 8 tests, -P 2
# in 1 of 15 on loopback, -P 1 never in 45): a key only for single-stream TCP tests.
PERMIT_KEY_MAX_PARALLEL = 1
# The server outlives nettune's client by at most this (seconds) past the client's own
# budget: its -t, so a server whose nettune was killed (or lost its SSH connection)
# stops by itself. -t also cuts traffic after that long, which the client never reaches.
SERVER_LIFETIME_SLACK = 20
# iperf 2.1.8's first test on a freshly started server runs slower than the next ones on
# the same server (loopback, -P 16: the second 1.28-1.32x the first in 6 of 6 and 5 of 5
# pairs; a 0.2 s test at the same -P first removed it: bench/fidelity, docs/engines.md).
# A bare user keeps one `iperf -s` running, so nettune warms its fresh server the same way.
WARM_UP_SECONDS = 0.2
# From this version on, -y C prints the -e columns (per iperf2's 2.2 source; not run here);
# before it, nettune reads the enhanced text instead.
CSV_ENHANCED_FROM = (2, 2)


def csv_output(tool_version: str) -> bool:
    """Whether this iperf2 prints the -e columns in its CSV (else: enhanced text)."""
    parts = tuple(int(x) for x in re.findall(r"\d+", tool_version or "")[:2])
    return len(parts) == 2 and parts >= CSV_ENHANCED_FROM


def report_rows(text: str, udp: bool) -> tuple[list[Row], int]:
    """The rows of one side's report, text or CSV (whichever the output is)."""
    return parse_text_rows(text) if is_text(text) else parse_rows(text, udp)


def _format_args(tool_version: str) -> list[str]:
    return ["-y", "C", "-e"] if csv_output(tool_version) else ["-e", "-f", "b"]


def _port_from_argv(argv: list[str]) -> int | None:
    for i, a in enumerate(argv[:-1]):
        if a in ("-p", "--port") and argv[i + 1].isdigit():
            return int(argv[i + 1])
    return None


def interval_arg(wl: Workload) -> str:
    """-i: the workload's interval in seconds (default 1), as iperf reads it ("2", "0.5")."""
    v = 1.0 if wl.interval is None else float(wl.interval)
    return f"{v:g}"


class Iperf2Engine(NetworkEngineBase):
    name = "iperf2"
    binary = "iperf"
    install_hint = "apt-get install iperf (or: nettune setup)"
    server_exits = False
    auth = "permit_key"  # --permit-key on both sides (engines/access.py)

    def version(self, version_output: str) -> str:
        return parse_version(version_output)

    def version_argv(self) -> list[str]:
        return [self.binary, "-v"]  # prints on stderr

    def auth_probe_argv(self) -> list[str]:
        return [self.binary, "--help"]  # lists --permit-key from 2.1 on

    def auth_available(self, probe_output: str) -> bool:
        return "--permit-key" in probe_output

    def auth_missing(self, hosts: list[str], required: bool) -> str:
        return f"iperf on {', '.join(hosts)} has no --permit-key (older than 2.1)"

    def server_lifetime(self, wl: Workload) -> int:
        return int(client_budget(wl)) + 1 + SERVER_LIFETIME_SLACK

    def permit_key_usable(self, wl: Workload) -> str | None:
        """Why this workload's server cannot require a permit key, or None if it can."""
        if wl.protocol != "tcp":
            return "iperf2 permit keys are TCP only: UDP servers accept any client that reaches their address"
        if not isinstance(wl.parallel, int) or wl.parallel > PERMIT_KEY_MAX_PARALLEL:
            return f"iperf2 -P {wl.parallel}: no permit key (iperf 2.1.8 drops parallel streams with one); the server accepts any client that reaches its address"
        return None

    def server_argv(self, wl: Workload, port: int, tool_version: str, access: Access | None = None) -> list[str]:
        argv = [self.binary, "-s", "-p", str(port), *_format_args(tool_version), "-t", str(self.server_lifetime(wl))]
        if not csv_output(tool_version):
            argv += ["-i", interval_arg(wl)]  # the sender's cwnd/RTT per interval when it is the server (-R)
        if access is not None and access.bind:
            argv += ["-B", access.bind]
        if access is not None and access.permit_key:
            # optional argument: only the --opt=value form is read (a separate word is not)
            argv += [f"--permit-key={access.permit_key}", "--permit-key-timeout", str(self.server_lifetime(wl))]
        if wl.protocol == "udp":
            argv.append("-u")
        # Socket options are per side in iperf2 (nothing is negotiated): the server needs
        # the window for what it receives, the length for its reads, and -Z for what it
        # sends with -R or --full-duplex.
        if wl.window is not None:
            argv += ["-w", str(wl.window)]
        if wl.length is not None:
            argv += ["-l", str(wl.length)]
        if wl.congestion:
            argv += ["-Z", str(wl.congestion)]
        return argv

    def client_argv(self, wl: Workload, server_address: str, port: int, tool_version: str, access: Access | None = None) -> list[str]:
        argv = [self.binary, "-c", server_address, "-p", str(port), *_format_args(tool_version), "-t", str(wl.duration), "-P", str(wl.parallel), "-i", interval_arg(wl)]
        if wl.protocol == "udp":
            argv.append("-u")
        if wl.bitrate is not None:
            argv += ["-b", rate_arg(wl.bitrate)]  # bits/s: iperf2 reads "1G" as 2^30 (spec.rates)
        if wl.reverse is True:
            argv.append("-R")  # 2.1+: same socket, server sends (needs a 2.1+ server)
        if wl.bidir is True:
            argv.append("--full-duplex")
        if wl.window is not None:
            argv += ["-w", str(wl.window)]
        if wl.congestion and wl.reverse is not True:
            # 2.1.8 refuses "-Z and --reverse together"; with -R the server (the sender)
            # applies it from its own command line
            argv += ["-Z", str(wl.congestion)]
        if wl.length is not None:
            argv += ["-l", str(wl.length)]
        if access is not None and access.permit_key:
            argv.append(f"--permit-key={access.permit_key}")
        return argv

    def listen_proto(self, wl: Workload) -> str:
        return "udp" if wl.protocol == "udp" else "tcp"

    def busy(self, client: SideOutput) -> bool:
        return False  # the iperf2 server runs any number of clients at once

    def warnings(self, wl: Workload) -> tuple[Workload, list[str]]:
        if isinstance(wl.omit, int) and wl.omit > 0:
            msg = f"iperf2 has no omit (-O); the first {wl.omit}s are measured too"
            return wl.model_copy(update={"omit": 0}), [msg]
        return wl, []

    def warm_up(self, wl: Workload) -> Workload | None:
        """The test itself for WARM_UP_SECONDS: the same streams, direction and options.
        TCP only: the slow first test was measured with TCP, and a UDP server of 2.1.8
        that served a warm-up then reports nothing of the next test (seen on the lab, -P 2)."""
        if wl.protocol == "udp":
            return None
        return wl.model_copy(update={"duration": WARM_UP_SECONDS, "omit": 0})

    def server_done(self, wl: Workload, stdout: str) -> bool:
        """True once the server has printed a final row for every stream it serves, so
        the driver can stop it (it never exits by itself)."""
        rows, _ = report_rows(stdout, wl.protocol == "udp")
        rows = [r for r in rows if "relay" not in r.ext]
        need = int(wl.parallel) * (2 if wl.bidir is True else 1)
        long_enough = 0.75 * float(wl.duration)
        done = {(r.src_port, r.dst_port, r.tid) for r in rows if r.tid >= 0 and r.start < 0.05 and r.end >= long_enough}
        return len(done) >= need

    def parse(self, wl: Workload, client: SideOutput, server: SideOutput) -> TestResult:
        dur = wl.duration if isinstance(wl.duration, (int, float)) else None
        res = TestResult(engine=self.name, protocol=str(wl.protocol), duration=None if dur is None else float(dur))
        try:
            _parse(wl, client, server, res)
        except Exception as e:  # noqa: BLE001 - a parser must not take a study down; say why
            res.ok = False
            res.error = f"could not read iperf2 output: {type(e).__name__}: {e}"
        return res


def _parse(wl: Workload, client: SideOutput, server: SideOutput, res: TestResult) -> None:
    udp = res.protocol == "udp"
    crows, cbad = report_rows(client.stdout, udp)
    srows, sbad = report_rows(server.stdout, udp)
    res.tool.unparsed_lines = {"client": cbad, "server": sbad}
    # a UDP client's text relays each stream's final server report: the receiver's numbers
    # when the server's own output is missing (an imported client log)
    relayed = [r for r in crows if "relay" in r.ext]
    crows = [r for r in crows if "relay" not in r.ext]
    if not srows:
        srows = relayed
    if not crows:
        res.ok = False
        why = tail(client.stderr) or tail(client.stdout) or "empty output"
        res.error = f"iperf2 client printed no report: {why}"
        return
    for r in crows:
        r.side = "client"
    for r in srows:
        r.side = "server"
    rows = crows + srows
    sport = _port_from_argv(client.argv) or _port_from_argv(server.argv) or wl.port
    if sport is None:  # the server's port is in every row; clients' ports in a few
        sport = Counter(p for r in rows for p in (r.src_port, r.dst_port) if p).most_common(1)[0][0]
    main = "s2c" if wl.reverse is True else "c2s"
    _classify(rows, sport, main, full_duplex=wl.bidir is True)
    # A server without a permit key serves anyone: rows of a connection our client did not
    # make (its port is in no client row) are another host's traffic, never ours to count.
    ours = {r.key for r in crows if isinstance(r.key, int)}
    foreign = {id(r) for r in srows if ours and isinstance(r.key, int) and r.key not in ours}
    if foreign:
        n = len({r.key for r in srows if id(r) in foreign})
        res.warnings.append(f"the server also served {n} connection(s) not from nettune's client (another host); left out")
        rows = [r for r in rows if id(r) not in foreign]

    finals, ivals = _split_final(rows)
    for d in ("c2s", "s2c"):
        if any(r.direction == d for r in rows):
            _direction(res, d, "forward" if d == main else "reverse", finals, ivals, udp)
    offered(res, _asked_per_stream(wl, client.stdout, udp), _streams(wl, res))
    if res.receiver_bps is None:
        res.ok = False
        who = "client" if main == "s2c" else "server"
        res.error = f"no receiver-side report from the {who} (its output is empty or truncated)" + (
            f"; stderr: {tail(server.stderr)}" if who == "server" and tail(server.stderr) else ""
        )


# "Sending 1470 byte datagrams, IPG target: 117.60 us": a UDP client's pace per stream
_IPG = re.compile(r"Sending (\d+) byte datagrams, IPG target: ([\d.]+) us")


def _asked_per_stream(wl: Workload, client_text: str, udp: bool) -> float | None:
    """The rate each stream was asked for: -b as the study gave it, else (UDP) the pace the
    client printed (its default when no -b was given); None for TCP without -b."""
    if wl.bitrate is not None:
        return float(parse_rate(wl.bitrate))
    m = _IPG.search(client_text or "") if udp else None
    return int(m.group(1)) * 8 / (float(m.group(2)) * 1e-6) if m and float(m.group(2)) > 0 else None


def _streams(wl: Workload, res: TestResult) -> int:
    n = len([s for s in res.streams if s.direction == "forward"])
    return n or (wl.parallel if isinstance(wl.parallel, int) else 1)


def _classify(rows: list[Row], sport: int, main: str, full_duplex: bool) -> None:
    """Direction and stream of every row."""
    tid_port: dict[tuple[str, int], int] = {}
    for r in rows:
        if full_duplex and r.direction:
            pass  # the text reader knew who sent it (iperf2_enhanced)
        elif full_duplex:
            # only 2.1.8's sender-first order tells the two ways apart; a row touching
            # neither end of the server's port is -d's connection back to the client
            r.direction = "s2c" if r.src_port == sport else "c2s" if r.dst_port == sport else "s2c" if r.src_port and r.dst_port else main
        else:
            r.direction = main
        peer = next((p for p in (r.src_port, r.dst_port) if p and p != sport), None)
        if peer is not None and r.tid >= 0:
            tid_port.setdefault((r.side, r.tid), peer)
        r.key = peer
    for r in rows:
        if r.tid < 0:
            r.key = "sum"
        elif r.key is None:  # --full-duplex receive rows: same socket, same id as the send rows
            r.key = tid_port.get((r.side, r.tid), ("id", r.side, r.tid))


def _split_final(rows: list[Row]) -> tuple[dict[tuple[str, str, Any], Row], list[Row]]:
    """The final row of each (side, direction, stream) starts at 0 and reaches the end of
    the test; a 1 s test prints 0-1 twice (interval, then final), so the last one wins."""
    groups: dict[tuple[str, str, Any], list[Row]] = {}
    ends: dict[tuple[str, str], float] = {}
    for r in rows:
        groups.setdefault((r.side, r.direction, r.key), []).append(r)
        ends[(r.side, r.direction)] = max(ends.get((r.side, r.direction), 0.0), r.end)
    finals: dict[tuple[str, str, Any], Row] = {}
    ivals: list[Row] = []
    for k, rs in groups.items():
        # a side's streams all end with the test: a sum whose final line was never printed
        # (a server stopped right after its streams' finals) has only interval rows
        last_end = max(max(r.end for r in rs), ends[(k[0], k[1])] if k[2] == "sum" else 0.0)
        cands = [r for r in rs if r.start < 0.05 and r.end >= last_end - 0.5]
        final = max(reversed(cands), key=lambda r: r.end) if cands else None
        if final is not None:
            finals[k] = final
        ivals += [r for r in rs if r is not final]
    return finals, ivals


def _direction(res: TestResult, d: str, label: str, finals: dict[tuple[str, str, Any], Row], ivals: list[Row], udp: bool) -> None:
    snd_side, rcv_side = ("client", "server") if d == "c2s" else ("server", "client")
    client_tid = {k[2]: r.tid for k, r in finals.items() if k[0] == "client"}
    keys = sorted({k[2] for k in finals if k[1] == d and k[2] != "sum"}, key=lambda x: (client_tid.get(x, 1 << 30), str(x)))
    streams: list[StreamResult] = []
    counts: dict[str, float] = {}  # -e: write/read calls, UDP datagrams out of order
    for n, key in enumerate(keys, 1):
        snd, rcv = finals.get((snd_side, d, key)), finals.get((rcv_side, d, key))
        for row, names in ((snd, ("writecnt", "writeerr")), (rcv, ("readcnt", "outoforder"))):
            for name in names:
                if row is not None and name in row.ext:
                    counts[name] = counts.get(name, 0) + row.ext[name]
        sr = StreamResult(id=client_tid.get(key, n), direction=label)
        if snd is not None:
            sr.sender_bps, sr.sender_bytes = snd.bps, snd.nbytes
            _tcp_info(sr, snd, [r for r in ivals if r.side == snd_side and r.direction == d and r.key == key])
        if rcv is not None:
            sr.receiver_bps, sr.receiver_bytes = rcv.bps, rcv.nbytes
            if udp and rcv.ext.get("datagrams", -1) >= 0:  # -1: the client's suppressed relay report
                sr.jitter_ms = rcv.ext.get("jitter")
                sr.lost_packets, sr.packets = int(rcv.ext.get("errors", 0)), int(rcv.ext["datagrams"])
                sr.lost_percent = rcv.ext.get("errpercent")
        streams.append(sr)
    res.streams += streams

    def side_total(side: str, bps: bool) -> float | int | None:
        s = finals.get((side, d, "sum"))  # 2.2 sum rows; 2.1.8 has none, nor has -P 1
        if s is not None:
            return s.bps if bps else s.nbytes
        if side == snd_side:
            return total(sr.sender_bps if bps else sr.sender_bytes for sr in streams)
        return total(sr.receiver_bps if bps else sr.receiver_bytes for sr in streams)

    retr = [sr.retransmits for sr in streams if sr.retransmits is not None]
    u = [sr for sr in streams if sr.packets is not None]
    lost, packets = sum(sr.lost_packets or 0 for sr in u), sum(sr.packets or 0 for sr in u)
    agg: dict[str, Any] = {
        "sender_bps": side_total(snd_side, True),
        "receiver_bps": side_total(rcv_side, True),
        "sender_bytes": _int(side_total(snd_side, False)),
        "receiver_bytes": _int(side_total(rcv_side, False)),
        "retransmits": sum(retr) if retr else None,
        **rtt_cwnd(streams),
        "lost_packets": lost if udp and u else None,
        "packets": packets if udp and u else None,
        "lost_percent": (100.0 * lost / packets if packets else 0.0) if udp and u else None,
        # a plain mean over streams, as iperf3 does for its sum
        "jitter_ms": sum(sr.jitter_ms or 0.0 for sr in u) / len(u) if udp and u else None,
    }
    named = {"writecnt": "write_count", "writeerr": "write_errors", "readcnt": "read_count", "outoforder": "udp_out_of_order"}
    counted = {named[k]: int(v) for k, v in counts.items()}
    if label == "forward":
        for k, v in agg.items():
            setattr(res, k, v)
        res.tool = res.tool.model_copy(update=counted)
    else:  # the table has the reverse rates only; the rest is the result's reverse part
        res.reverse_sender_bps, res.reverse_receiver_bps = agg.pop("sender_bps"), agg.pop("receiver_bps")
        res.reverse_retransmits = agg.pop("retransmits")
        res.reverse = ReverseDirection(**agg, **counted)
    ids = {key: client_tid.get(key, n) for n, key in enumerate(keys, 1)}
    res.intervals += _intervals([r for r in ivals if r.side == "client" and r.direction == d], keys, label, ids)


def _int(x: float | None) -> int | None:
    return None if x is None else int(x)


def _tcp_info(sr: StreamResult, final: Row, ivals: list[Row]) -> None:
    """-e write extras (2.2, or a build that prints them): the final row's retry count is
    the whole test's; RTT is averaged over the interval samples, as iperf3 does."""
    if "tcpretry" in final.ext:
        sr.retransmits = int(final.ext["tcpretry"])
    cw = [r.ext["tcpcwnd"] * 1024 for r in (*ivals, final) if r.ext.get("tcpcwnd", 0) > 0]  # KB
    sr.max_cwnd = int(max(cw)) if cw else None
    rtts = [r.ext["tcprtt"] for r in ivals if r.ext.get("tcprtt", 0) > 0]
    if not rtts and final.ext.get("tcprtt", 0) > 0:
        rtts = [final.ext["tcprtt"]]
    if rtts:
        sr.rtt_mean_us, sr.rtt_min_us, sr.rtt_max_us = sum(rtts) / len(rtts), min(rtts), max(rtts)


def _intervals(rows: list[Row], keys: list[Any], label: str, ids: dict[Any, int]) -> list[Interval]:
    groups: dict[tuple[float, float], list[Row]] = {}
    for r in sorted(rows, key=lambda r: r.tid < 0):  # streams first, then [SUM]s
        if r.end <= r.start:
            continue
        span = (round(r.start, 3), round(r.end, 3))
        if r.tid < 0 and span not in groups:
            # 2.1.8 -P, under load: the last interval's [SUM] runs to the sum's own close
            # ("0.5000-1.0023") while its streams' rows say 0.5000-1.0000; it is their
            # interval, and their total is the one that spans it
            same = [k for k in groups if k[0] == span[0] and k[1] < span[1] <= k[1] + 0.25 * (k[1] - k[0])]
            if len(same) == 1:
                continue
        groups.setdefault(span, []).append(r)
    order = {k: i for i, k in enumerate(keys)}
    out: list[Interval] = []
    for (start, end), rs in sorted(groups.items()):
        per = sorted((r for r in rs if r.tid >= 0), key=lambda r: order.get(r.key, len(order)))
        summ = next((r for r in rs if r.tid < 0), None)
        retr = [r.ext["tcpretry"] for r in per if "tcpretry" in r.ext]
        cw = [r.ext["tcpcwnd"] * 1024 for r in per if r.ext.get("tcpcwnd", 0) > 0]
        rtt = [(r.ext["tcprtt"], float(r.nbytes)) for r in per if r.ext.get("tcprtt", 0) > 0]
        out.append(
            Interval(
                start=start,
                end=end,
                bps=summ.bps if summ is not None else sum(r.bps for r in per),
                direction=label,
                retransmits=int(sum(retr)) if retr else None,
                cwnd=int(max(cw)) if cw else None,
                rtt_us=weighted_mean(rtt),
                stream_bps=[r.bps for r in per],
                streams=[IntervalStream(id=ids.get(r.key, 0), bps=r.bps, bytes=r.nbytes, retransmits=_int(r.ext.get("tcpretry")),
                                        cwnd=int(r.ext["tcpcwnd"] * 1024) if r.ext.get("tcpcwnd", 0) > 0 else None,
                                        rtt_us=r.ext["tcprtt"] if r.ext.get("tcprtt", 0) > 0 else None) for r in per],
            )
        )
    return out
